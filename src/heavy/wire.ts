/**
 * What crosses the thread boundary of the Node pool: a task's value, or its error as plain data, made
 * back into the same ApiError or GenerationError on the other side (a thrown class instance would arrive
 * as a bare Error and turn a 422 into a 500), and which byte arrays may move across instead of being copied.
 *
 * @example
 * const reply = await settle(() => HEAVY_TASKS.qrDecode(input)); // in the thread
 * return unwrap(reply); // on the request thread: the value, or the same error thrown again
 */
import { ApiError, type ErrorCode, type ErrorDetail } from "../lib/errors";
import { GenerationError } from "../photo/types";

export type WireError =
  | { kind: "api"; code: ErrorCode; message: string; details?: ErrorDetail[]; headers: Record<string, string> }
  | { kind: "generation"; code: GenerationError["code"]; message: string; retryable: boolean }
  | { kind: "error"; name: string; message: string; stack?: string };

export type Reply<T> = { ok: true; value: T } | { ok: false; error: WireError };

/** Runs `fn` and answers its value or its error as data. */
export async function settle<T>(fn: () => Promise<T>): Promise<Reply<T>> {
  try {
    return { ok: true, value: await fn() };
  } catch (err) {
    if (err instanceof ApiError) return { ok: false, error: { kind: "api", code: err.code, message: err.message, details: err.details, headers: err.headers } };
    if (err instanceof GenerationError) return { ok: false, error: { kind: "generation", code: err.code, message: err.message, retryable: err.retryable } };
    const e = err instanceof Error ? err : new Error(String(err));
    return { ok: false, error: { kind: "error", name: e.name, message: e.message, stack: e.stack } };
  }
}

/** The value of a reply, or its error thrown again as the class it was. */
export function unwrap<T>(reply: Reply<T>): T {
  if (reply.ok) return reply.value;
  const e = reply.error;
  if (e.kind === "api") throw new ApiError(e.code, e.message, { details: e.details, headers: e.headers });
  if (e.kind === "generation") throw new GenerationError(e.code, e.message, e.retryable);
  const error = new Error(e.message);
  error.name = e.name;
  if (e.stack) error.stack = `${e.stack}\n    (in a heavy-work thread)`;
  throw error;
}

/** Below this a copy costs next to nothing; Node's shared Buffer pool slabs (8 KiB) are never moved. */
const MOVE_AT_LEAST = 64 * 1024;

/**
 * The memory of the handed-over arrays that can move to the other thread instead of being copied: an array
 * that is the whole of its own ArrayBuffer (a Buffer or view into memory that holds other things stays
 * where it is, and is copied as before).
 */
export function movable(handOver: readonly Uint8Array[] | undefined): ArrayBuffer[] | undefined {
  const list: ArrayBuffer[] = [];
  for (const bytes of handOver ?? []) {
    const buffer = bytes.buffer;
    if (!(buffer instanceof ArrayBuffer) || buffer.byteLength < MOVE_AT_LEAST || list.includes(buffer)) continue;
    if (bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength) list.push(buffer);
  }
  return list.length > 0 ? list : undefined;
}
