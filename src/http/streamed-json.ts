/**
 * JSON answers that carry large Base64 values (area B's `photoDataUri`, a 2048 px PNG of 2–7 MB): the JSON
 * around them is made as usual, and each value is written into the answer as it streams out, a piece at a
 * time, from the bytes. The value never exists as a string: `c.json` would make its Base64 as bytes, as a
 * string, the JSON text and that text's UTF-8 again, four copies each a third larger than the image, that in
 * a Worker count against the isolate's 128 MB until V8 collects them (docs/architecture.md, "The edge runtime").
 *
 * @example
 * return streamedJson(c, { data: { photoDataUri: new Base64Value("data:image/png;base64,", png) } }, 200);
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { base64Pieces } from "../lib/encoding";

/** A JSON string value written as `prefix` and the Base64 of `bytes`. */
export class Base64Value {
  constructor(
    readonly prefix: string,
    readonly bytes: Uint8Array,
  ) {}
}

/** `c.json(body, status)`, with every `Base64Value` in `body` streamed from its bytes. */
export function streamedJson(c: Context, body: unknown, status: ContentfulStatusCode): Response {
  const values: Base64Value[] = [];
  const marker = `\u0000base64-value:${crypto.randomUUID()}:`;
  const text = JSON.stringify(body, (_key, value: unknown) => (value instanceof Base64Value ? `${marker}${values.push(value) - 1}` : value));
  if (values.length === 0) return c.body(text, status, { "Content-Type": "application/json" });
  const encoder = new TextEncoder();
  function* pieces(): Generator<Uint8Array> {
    let rest = text;
    for (const [i, value] of values.entries()) {
      const placeholder = JSON.stringify(`${marker}${i}`); // JSON.stringify visits values in the order it writes them
      const at = rest.indexOf(placeholder);
      yield encoder.encode(`${rest.slice(0, at)}${JSON.stringify(value.prefix).slice(0, -1)}`);
      for (const ascii of base64Pieces(value.bytes)) yield ascii.slice(); // the pieces share one buffer
      yield encoder.encode('"');
      rest = rest.slice(at + placeholder.length);
    }
    yield encoder.encode(rest);
  }
  const source = pieces();
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      const next = source.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
  });
  return c.body(stream, status, { "Content-Type": "application/json" });
}
