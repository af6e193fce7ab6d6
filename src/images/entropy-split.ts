/**
 * One baseline scan's entropy decoding split over two threads, without restart markers: the shared memory
 * and the handshake (the decoding itself is in jpeg-decode.ts).
 *
 * Huffman-coded data cannot be entered in the middle: nothing says where a block starts. But a decoder
 * started at an arbitrary bit soon falls into step with the true block boundaries (usually within a few
 * dozen blocks; the head looks among the first `MARKS`), and from the first boundary it shares with a
 * decoder that started at the beginning, the two read the same blocks. So the tail starts at a byte part
 * way in (`from`, 60 % of the data) as if a block of the MCU's first component began there, and records
 * where each of its first blocks began (its bit position and its place in the MCU) and every block's
 * coefficients (the IDCT's window, as read; the DC as the difference it was coded as, since the tail
 * cannot know the prediction).
 * The head decodes from the start and, once past `from`, compares each of its block boundaries with the
 * tail's: at the first one that matches in position and in place, the tail's blocks from there are the
 * true ones, and the head stops reading and takes them (adding up the DC differences from its own
 * prediction and running the IDCT). The bytes either way are those of one thread's decode.
 *
 * What is not certain is settled by the head falling back to reading on alone, from where it stands: the
 * tail never started (the head cancels it), no boundary matched among the tail's first `MARKS` blocks, the
 * tail stopped short of the scan's last block (a marker or the end of the file in its part), or
 * it met a code no table has, or a coefficient past the 64th, at or after the matched block (the file is
 * corrupt there, and the head's own reading of it fails as on one thread), or the tail is slower than the
 * head reading its part alone would be (`patience`). The head waits for the tail to finish before it
 * takes any block, so it can still fall back; and the tail stops soon after it is cancelled.
 *
 * @example
 * // head: const memory = SplitMemory.create(capacity, window); offer it with the plan; then match/confirm
 * // tail: const memory = new SplitMemory(plan.memory, plan.capacity, plan.window); if (memory.start()) ...
 */

/** Block boundaries the tail records for the head to match: far more than resynchronising takes. */
export const MARKS = 4096;
/** Codes the tail may fail to read (its false starts) before it gives up. */
const MAX_ERRORS = 64;

const STATE = 0;
const MARKED = 1;
const DONE = 2;
const ERRORS = 3;
const TAKEN = 4;
/** Moves on with every publication of the tail's (marks, the end), after it: what the head waits on. */
const TICK = 5;
const WORDS = 8;

const enum SplitState {
  Waiting = 0,
  Running = 1,
  Cancelled = 2,
  Finished = 3,
}

/** What `match` says when the tail's next boundary is still ahead of the head. */
export const NOT_YET = -1;
/** What `match` says when the split is off: the head reads on alone. */
export const GIVE_UP = -2;

export class SplitMemory {
  private readonly control: Int32Array;
  /** Tail-relative bit position and MCU place of each of the tail's first blocks. */
  private readonly marks: Int32Array;
  private readonly places: Uint8Array;
  private readonly errors: Int32Array;
  /** `window` values per block: the DC difference, then the rest of the IDCT's window, as read. */
  readonly coefficients: Int16Array;
  /** The head's side: the tail's next mark it has not passed, and how many it has seen published. */
  private next = 0;
  private marked = 0;
  /** Until when (performance.now()) the head waits for the tail before it reads on alone. */
  private deadline = Infinity;

  /** Memory for a scan of up to `capacity` blocks, `window` coefficients kept of each. */
  static create(capacity: number, window: number): SplitMemory {
    return new SplitMemory(new SharedArrayBuffer(SplitMemory.bytes(capacity, window)), capacity, window);
  }

  static bytes(capacity: number, window: number): number {
    return 4 * (WORDS + MARKS + MAX_ERRORS) + MARKS + 2 * capacity * window;
  }

  constructor(
    readonly memory: SharedArrayBuffer,
    readonly capacity: number,
    readonly window: number,
  ) {
    let o = 0;
    const take = (bytes: number) => ((o += bytes), o - bytes);
    this.control = new Int32Array(memory, take(4 * WORDS), WORDS);
    this.marks = new Int32Array(memory, take(4 * MARKS), MARKS);
    this.errors = new Int32Array(memory, take(4 * MAX_ERRORS), MAX_ERRORS);
    this.places = new Uint8Array(memory, take(MARKS), MARKS);
    this.coefficients = new Int16Array(memory, take(2 * capacity * window), capacity * window);
  }

  // --- the tail's side ---------------------------------------------------------------------------------

  /** Whether the tail may go ahead (false when the head already cancelled it). */
  start(): boolean {
    return Atomics.compareExchange(this.control, STATE, SplitState.Waiting, SplitState.Running) === SplitState.Waiting;
  }

  /** Records where block `n` began (tail-relative bit) and its place in the MCU. */
  mark(n: number, bit: number, place: number): void {
    this.marks[n] = bit;
    this.places[n] = place;
    if ((n & 63) === 63) this.publishMarks(n + 1);
  }

  /**
   * Block `n` could not be read (it is not a block of the scan, or the file is corrupt there); false when
   * too many were.
   */
  error(n: number): boolean {
    const count = this.control[ERRORS]!;
    if (count >= MAX_ERRORS) return false;
    this.errors[count] = n;
    Atomics.store(this.control, ERRORS, count + 1);
    return true;
  }

  /** Blocks read so far; false when the head has cancelled the split (the tail stops). */
  progress(blocks: number): boolean {
    Atomics.store(this.control, DONE, blocks);
    return Atomics.load(this.control, STATE) === SplitState.Running;
  }

  /** The tail is done with `blocks` blocks read; the head may take them. */
  finish(blocks: number): void {
    Atomics.store(this.control, DONE, blocks);
    Atomics.store(this.control, MARKED, Math.min(blocks, MARKS));
    Atomics.compareExchange(this.control, STATE, SplitState.Running, SplitState.Finished);
    this.tick();
  }

  private publishMarks(count: number): void {
    Atomics.store(this.control, MARKED, count);
    this.tick();
  }

  private tick(): void {
    Atomics.add(this.control, TICK, 1);
    Atomics.notify(this.control, TICK);
  }

  // --- the head's side ---------------------------------------------------------------------------------

  /**
   * From now on the head waits at most `ms` for the tail (set when it reaches the tail's start: about what
   * reading the tail's part alone would take, so a tail that stalls costs at most that much again).
   */
  patience(ms: number): void {
    this.deadline = performance.now() + ms;
  }

  /**
   * The head is at a block boundary `bit` bits past the tail's start, at `place` in its MCU: the tail's
   * block that began at the same bit in the same place, NOT_YET when the tail has not been there yet (the
   * head reads this block itself), or GIVE_UP. Waits while the tail has not recorded that far.
   */
  match(bit: number, place: number): number {
    for (;;) {
      if (this.next >= this.marked && !this.moreMarks()) return this.giveUp();
      const at = this.marks[this.next]!;
      if (at < bit) {
        this.next++;
        continue;
      }
      return at === bit && this.places[this.next] === place ? this.next : NOT_YET;
    }
  }

  /**
   * Waits for the tail to finish, then whether its blocks `from` to `from + count` are all there and
   * all read without a failed code; if so the head takes them (`taken` says from which of its own blocks).
   */
  confirm(from: number, count: number, headBlock: number): boolean {
    for (;;) {
      const tick = Atomics.load(this.control, TICK);
      const state = Atomics.load(this.control, STATE);
      if (state === SplitState.Finished) break;
      if (state !== SplitState.Running || !this.waitFor(TICK, tick)) {
        this.cancel();
        return false;
      }
    }
    const errors = this.errors.subarray(0, Math.min(MAX_ERRORS, this.control[ERRORS]!));
    const clean = this.control[DONE]! >= from + count && errors.every((n) => n < from || n >= from + count);
    if (clean) Atomics.store(this.control, TAKEN, headBlock + 1);
    return clean;
  }

  /** The head's block from which the tail's blocks were taken, or -1 (none: the head read every block). */
  get taken(): number {
    return Atomics.load(this.control, TAKEN) - 1;
  }

  /** The head reads on alone: a tail that has not finished stops (or never starts). */
  cancel(): void {
    if (Atomics.compareExchange(this.control, STATE, SplitState.Waiting, SplitState.Cancelled) !== SplitState.Waiting) {
      Atomics.compareExchange(this.control, STATE, SplitState.Running, SplitState.Cancelled);
    }
  }

  private giveUp(): number {
    this.cancel();
    return GIVE_UP;
  }

  /** Waits until the tail has recorded more marks; false when it never will. */
  private moreMarks(): boolean {
    if (this.next >= MARKS) return false;
    for (;;) {
      // The tick first: whatever the tail publishes after this load moves it, so the wait below returns.
      const tick = Atomics.load(this.control, TICK);
      const marked = Atomics.load(this.control, MARKED);
      if (marked > this.marked) {
        this.marked = marked;
        return true;
      }
      const state = Atomics.load(this.control, STATE);
      // A tail that has not started by now has no thread yet: the head does not wait for one.
      if (state === SplitState.Waiting) return false;
      if (state !== SplitState.Running) {
        // Finished after its last marks, or cancelled: whatever it published is all there will be.
        this.marked = Math.max(this.marked, Atomics.load(this.control, MARKED));
        return this.next < this.marked;
      }
      if (!this.waitFor(TICK, tick)) return false;
    }
  }

  /** Blocks until word `index` moves from `value` (at most until the deadline); false once it has passed. */
  private waitFor(index: number, value: number): boolean {
    const left = this.deadline - performance.now();
    if (left <= 0) return false;
    Atomics.wait(this.control, index, value, Math.min(left, 1000));
    return true;
  }
}
