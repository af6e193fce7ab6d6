/**
 * Normalisation split over two threads (Node's heavy-work pool, when two of its threads are free): the head
 * decodes the JPEG's YCbCr planes into shared memory and says after each MCU row how far it has got; the
 * tail resizes and encodes the rows already decoded while the head decodes the next ones. Before that, when
 * the upload is in shared memory and its scan allows it, the tail reads the second part of the entropy
 * data while the head reads the first (entropy-split.ts), and the head takes the tail's blocks from where
 * the two meet.
 *
 * The pipe is a small shared word array and a message port, both made by the request thread:
 * - `STATE`: Waiting until the head has read the frame; then Streaming (the planes were posted on the port),
 *   Alone (the head does everything itself: not a JPEG, progressive, greyscale, CMYK), Done (every row
 *   decoded: the tail's result is the answer) or Failed (the head gave up after Streaming, or its thread
 *   died: the tail stops, and the head's own result, or error, is the answer).
 * - `ROWS`: MCU rows decoded; set to FINAL with Done and Failed, so one wait on it sees every change.
 * - `WANT`: the MCU rows the tail waits for; the head wakes it only once they are decoded.
 * - `CLAIMS`: the output's MCU rows still to encode, `first | end << 16`, once the tail has set it. The tail
 *   takes them from the top one at a time; the head, once it has decoded every row, takes the last 40 % of
 *   what is left (`takeRowsFrom`), and encodes it meanwhile (the output has a restart interval per MCU
 *   row, so the two parts join).
 *
 * @example
 * // head thread: normaliseHead(bytes, limits, pipe) -> null once the tail has the JPEG
 * // tail thread: normaliseTail(pipe) -> the NormalisedJpeg, or null when the head kept the work
 */
import type { EntropySplit, PlaneSink, SinkPlane } from "./jpeg-decode";

/** What the request thread makes and hands to both threads. */
export interface PlanePipe {
  control: SharedArrayBuffer;
  port: MessagePort;
}

/** The planes as the head posts them: their geometry, their shared memory, and what the tail makes of them. */
export interface PlaneOffer {
  planes: SinkPlane[];
  memory: SharedArrayBuffer[];
  /** The stored orientation's output size and the EXIF orientation to apply after. */
  target: { width: number; height: number; orientation: number };
  /**
   * The last part of the scan's entropy decoding, for the tail to do first (`decodeSplitTail`), with the
   * file in shared memory; absent when the scan or the upload does not allow it.
   */
  split?: { plan: EntropySplit; bytes: Uint8Array };
}

const STATE = 0;
const ROWS = 1;
const WANT = 2;
const CLAIMS = 3;
/** Fewer output MCU rows left than this, and the head leaves them to the tail. */
const MIN_SHARED_ROWS = 4;
/**
 * The head's share of the rows left, under half: it makes them more slowly per row than the tail (the
 * resize's first rows and buffers are its own, and its code for them is less warm).
 */
const HEAD_ROWS_SHARE = 0.4;
const FINAL = 0x7fffffff;
/** MCU rows the tail waits for beyond what it needs, so it wakes once for a few rows instead of once for each. */
const SLACK = 2;

export const enum PipeState {
  Waiting = 0,
  Streaming = 1,
  Alone = 2,
  Done = 3,
  Failed = 4,
}

/** A new pipe's control words (the request thread makes the port pair). */
export function pipeControl(): SharedArrayBuffer {
  return new SharedArrayBuffer(16);
}

/**
 * The request thread's side once the head's task has ended or died: a head that never said Done or Alone
 * is Failed, so a tail still waiting stops.
 */
export function abandonPipe(control: SharedArrayBuffer): void {
  const words = new Int32Array(control);
  if (Atomics.compareExchange(words, STATE, PipeState.Waiting, PipeState.Failed) === PipeState.Waiting) {
    wake(words);
    return;
  }
  if (Atomics.compareExchange(words, STATE, PipeState.Streaming, PipeState.Failed) === PipeState.Streaming) wake(words);
}

function wake(words: Int32Array): void {
  Atomics.store(words, ROWS, FINAL);
  Atomics.notify(words, ROWS);
  Atomics.notify(words, STATE);
}

/**
 * The head's side: a `PlaneSink` for the decoder that offers the planes to the tail and publishes the rows
 * as they are decoded.
 */
export class PipeHead {
  private readonly words: Int32Array;

  /** `shared`: the file in shared memory, which lets the tail take half of the entropy decoding. */
  constructor(
    private readonly pipe: PlanePipe,
    private readonly shared?: Uint8Array,
  ) {
    this.words = new Int32Array(pipe.control);
  }

  /** Whether the tail has the planes (Streaming or Done). */
  get streaming(): boolean {
    const state = Atomics.load(this.words, STATE);
    return state === PipeState.Streaming || state === PipeState.Done;
  }

  /** The sink for a decode whose planes the tail is to resize to `target` (stored orientation). */
  sink(target: PlaneOffer["target"]): PlaneSink {
    const shared = this.shared;
    return {
      splits: !!shared,
      planes: (planes, _size, plan) => {
        if (Atomics.load(this.words, STATE) !== PipeState.Waiting) return null;
        const memory = planes.map((p) => new SharedArrayBuffer(p.stride * p.rows));
        const offer: PlaneOffer = { planes, memory, target, split: plan && shared ? { plan, bytes: shared } : undefined };
        this.pipe.port.postMessage(offer);
        if (Atomics.compareExchange(this.words, STATE, PipeState.Waiting, PipeState.Streaming) !== PipeState.Waiting) return null;
        Atomics.notify(this.words, STATE);
        return memory.map((m) => new Uint8ClampedArray(m));
      },
      rows: (mcuRows) => {
        Atomics.store(this.words, ROWS, mcuRows);
        if (mcuRows >= Atomics.load(this.words, WANT)) Atomics.notify(this.words, ROWS);
      },
      // The tail's thread is free as soon as the frame shows the head keeps the work.
      decline: () => this.close(),
    };
  }

  /** Every row is decoded: the tail's result is the answer. */
  done(): void {
    if (Atomics.compareExchange(this.words, STATE, PipeState.Streaming, PipeState.Done) === PipeState.Streaming) wake(this.words);
  }

  /**
   * After `done`: takes the last HEAD_ROWS_SHARE of the output MCU rows the tail has not yet begun, and
   * answers the first of them (the head encodes from there to the end); -1 when the tail has not opened the
   * rows or few are left.
   */
  takeRowsFrom(): number {
    for (;;) {
      const claims = Atomics.load(this.words, CLAIMS);
      const first = claims & 0xffff;
      const end = claims >>> 16;
      if (end - first < MIN_SHARED_ROWS) return -1;
      const from = end - Math.floor((end - first) * HEAD_ROWS_SHARE);
      if (Atomics.compareExchange(this.words, CLAIMS, claims, first | (from << 16)) === claims) return from;
    }
  }

  /**
   * The head keeps (or takes back) the work: Alone before any offer, Failed after one. Called when the
   * head's task ends in any way; after `done` it changes nothing.
   */
  close(): void {
    if (Atomics.compareExchange(this.words, STATE, PipeState.Waiting, PipeState.Alone) === PipeState.Waiting) wake(this.words);
    else abandonPipe(this.pipe.control);
  }
}

/** Raised in the tail when the head gave up or went quiet: the tail's task then answers null. */
export class PipeAbandoned extends Error {}

/**
 * The tail's side: waits (asynchronously) for the head to read the frame, then hands over the planes, or
 * null when the head keeps the work; afterwards `rowsOf` blocks the tail's thread until a plane has the
 * rows asked for. Every wait ends by `deadline` (ms since the epoch) with PipeAbandoned.
 */
export class PipeTail {
  private readonly words: Int32Array;

  constructor(
    private readonly pipe: PlanePipe,
    private readonly deadline: number,
  ) {
    this.words = new Int32Array(pipe.control);
  }

  async offer(): Promise<PlaneOffer | null> {
    const message = new Promise<PlaneOffer>((resolve) => {
      this.pipe.port.onmessage = (event: MessageEvent<PlaneOffer>) => resolve(event.data);
    });
    try {
      for (;;) {
        const state = Atomics.load(this.words, STATE);
        if (state === PipeState.Streaming || state === PipeState.Done) return await message;
        if (state !== PipeState.Waiting) return null;
        const left = this.deadline - Date.now();
        // Gone quiet: a head that starts after all finds the pipe Failed and does the work alone.
        if (left <= 0) {
          if (Atomics.compareExchange(this.words, STATE, PipeState.Waiting, PipeState.Failed) === PipeState.Waiting) return null;
          continue;
        }
        const wait = Atomics.waitAsync(this.words, STATE, PipeState.Waiting, left);
        if (wait.async) await wait.value;
      }
    } finally {
      this.pipe.port.close();
    }
  }

  /** Opens the output's `mcuRows` MCU rows to be taken (by `take`, and by the head's `takeRowsFrom`). */
  openRows(mcuRows: number): void {
    Atomics.compareExchange(this.words, CLAIMS, 0, mcuRows << 16);
  }

  /** Takes output MCU row `my` (the next from the top) to encode; false when the head has taken it. */
  take(my: number): boolean {
    for (;;) {
      const claims = Atomics.load(this.words, CLAIMS);
      const end = claims >>> 16;
      if (my >= end) return false;
      if (Atomics.compareExchange(this.words, CLAIMS, claims, (my + 1) | (end << 16)) === claims) return true;
    }
  }

  /**
   * Blocks until `plane` (of `offer.planes`) has at least `rows` rows decoded, and returns how many it has;
   * throws PipeAbandoned when the head failed or the deadline passed.
   */
  rowsOf(plane: SinkPlane, rows: number): number {
    const want = Math.min(rows, plane.height);
    for (;;) {
      const mcuRows = Atomics.load(this.words, ROWS);
      if (mcuRows === FINAL) {
        if (Atomics.load(this.words, STATE) !== PipeState.Done) throw new PipeAbandoned("the head gave up");
        return plane.height;
      }
      const have = Math.min(plane.height, mcuRows * plane.rowsPerMcuRow);
      if (have >= want) return have;
      const left = this.deadline - Date.now();
      if (left <= 0) throw new PipeAbandoned("the head went quiet");
      // Woken once the rows wanted (and a few more) are decoded; every terminal state wakes it too.
      Atomics.store(this.words, WANT, Math.ceil(want / plane.rowsPerMcuRow) + SLACK);
      Atomics.wait(this.words, ROWS, mcuRows, left);
    }
  }
}
