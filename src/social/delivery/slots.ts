/**
 * A counting semaphore for platform calls: at most `size` hold a slot, the rest wait in arrival order. The
 * Node scheduler claims and prepares more targets than it sends at once (its claims are read ahead of their
 * due time), and this bounds how many of them are talking to a platform.
 *
 * @example
 * const slots = sendSlots(16);
 * const release = await slots.acquire();
 * try { await publish(); } finally { release(); }
 */
export interface SendSlots {
  /** Resolves when a slot is free, with the function that frees it again (calling it twice frees one slot). */
  acquire(): Promise<() => void>;
}

export function sendSlots(size: number): SendSlots {
  let free = size;
  const waiting: Array<() => void> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) next();
    else free++;
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
  };
}
