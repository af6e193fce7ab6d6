/**
 * A counting semaphore for platform calls: at most `size` hold a slot, the rest wait in arrival order. The
 * Node scheduler claims and prepares more targets than it sends at once (its claims are read ahead of their
 * due time), and this bounds how many of them are talking to a platform. `idle()` tells when none is: the
 * records of a burst's answers wait for that (src/social/delivery/store.ts), so the sends go first.
 *
 * @example
 * const slots = sendSlots(16);
 * const release = await slots.acquire();
 * try { await publish(); } finally { release(); }
 */
export interface SendSlots {
  /** Resolves when a slot is free, with the function that frees it again (calling it twice frees one slot). */
  acquire(): Promise<() => void>;
  /** Resolves when no slot is held and none is waited for (at once if so now). */
  idle(): Promise<void>;
}

export function sendSlots(size: number): SendSlots {
  let free = size;
  const waiting: Array<() => void> = [];
  let idleWaiters: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else if (++free === size && idleWaiters.length) {
      const wake = idleWaiters;
      idleWaiters = [];
      for (const w of wake) w();
    }
  };
  const once = () => {
    let done = false;
    return () => {
      if (!done) (done = true), release();
    };
  };
  return {
    acquire() {
      if (free > 0) {
        free--;
        return Promise.resolve(once());
      }
      return new Promise((resolve) => waiting.push(() => resolve(once())));
    },
    idle() {
      if (free === size) return Promise.resolve();
      return new Promise((resolve) => idleWaiters.push(resolve));
    },
  };
}
