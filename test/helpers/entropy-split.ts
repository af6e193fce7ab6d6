/**
 * A JPEG's planes decoded on one thread with the entropy split's two sides run in turn (src/images/
 * entropy-split.ts): the tail's part inside the sink's `planes`, before the head's scan, as a tail that has
 * finished by the time the head gets there. So the split's answer is deterministic, and comparable with one
 * thread's: the planes (as one digest) or the error the decode threw.
 *
 * @example
 * const one = decodeAlone(bytes, 520);
 * const two = decodeWithSplit(bytes, 520);
 * expect([two.error, two.planes]).toEqual([one.error, one.planes]);
 */
import { createHash } from "node:crypto";
import { SplitMemory } from "../../src/images/entropy-split";
import { decodeJpegPlanes, decodeSplitTail, type PlaneSink } from "../../src/images/jpeg-decode";

export interface Decoded {
  /** The Y, Cb and Cr planes as one hex digest (comparing 3 MB arrays element by element is slow). */
  planes: string | null;
  error: string | null;
}

/** One thread's decode: the planes at the smallest scale that keeps `min` wide, or the error. */
export function decodeAlone(bytes: Uint8Array, min: number): Decoded {
  return attempt(() => decodeJpegPlanes(bytes, min, 1));
}

/**
 * The same decode with a split offered: `tail` "first" runs the tail's part before the head's scan, "never"
 * leaves it unstarted, "stalled" starts it and then does nothing (a thread that stopped). Also whether a
 * split was offered, from which of the head's blocks it took the tail's (-1: none), and the split's memory.
 */
export function decodeWithSplit(
  bytes: Uint8Array,
  min: number,
  tail: "first" | "never" | "stalled" = "first",
): Decoded & { offered: boolean; taken: number; memory?: SplitMemory } {
  const shared = new Uint8Array(new SharedArrayBuffer(bytes.length));
  shared.set(bytes);
  let memory: SplitMemory | undefined;
  const sink: PlaneSink = {
    splits: true,
    planes: (planes, _size, split) => {
      if (split) {
        memory = new SplitMemory(split.memory, split.capacity, split.size * split.size);
        if (tail === "first") decodeSplitTail(shared, split);
        if (tail === "stalled") memory.start();
      }
      return planes.map((p) => new Uint8ClampedArray(new SharedArrayBuffer(p.stride * p.rows)));
    },
    rows: () => {},
    decline: () => {},
  };
  const decoded = attempt(() => decodeJpegPlanes(bytes, min, 1, sink));
  return { ...decoded, offered: !!memory, taken: memory?.taken ?? -1, memory };
}

function attempt(decode: () => ReturnType<typeof decodeJpegPlanes>): Decoded {
  try {
    const image = decode();
    if (!image) return { planes: null, error: null };
    const hash = createHash("sha256");
    for (const p of [image.y, image.cb, image.cr]) hash.update(p.data);
    return { planes: hash.digest("hex"), error: null };
  } catch (e) {
    return { planes: null, error: (e as Error).message };
  }
}
