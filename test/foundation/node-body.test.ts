/**
 * On Node, an inline-image body with a declared length is read from the socket's own chunks
 * (`untouchedBody`, functions/node/drain-body.ts), not through @hono/node-server's web streams: through the
 * whole middleware chain of the real app (body limit, auth, rate limit), served by @hono/node-server as
 * `npm start` serves it. Anything that opens the body on the way (the body limit once did) turns the direct
 * read off without failing a request, so this asks the body source which way each request went.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { serve, type ServerType } from "@hono/node-server";
import { createTestApp } from "../helpers/harness";
import { makePhotoJpeg } from "../helpers/images";
import { configureBodySource } from "../../src/http/inline-images";
import { MAX_BODY_BYTES } from "../../src/app";
import { drainUnreadBody, untouchedBody } from "../../functions/node/drain-body";

let h: Awaited<ReturnType<typeof createTestApp>>;
let server: ServerType;
let port: number;
let apiKey: string;
let body: Buffer;
/** For each body the inline-image middleware read: whether it came from Node's own chunks. */
const direct: boolean[] = [];

beforeAll(async () => {
  h = await createTestApp({ env: { RATE_LIMIT_SOCIAL_WRITE: "1000" } });
  ({ apiKey } = await h.createUser());
  configureBodySource((env) => {
    const chunks = untouchedBody(env);
    direct.push(chunks !== undefined);
    return chunks;
  });
  server = serve({ fetch: drainUnreadBody(h.app.fetch, { maxBytes: MAX_BODY_BYTES }), port: 0, hostname: "127.0.0.1" });
  await new Promise((resolve) => server.once("listening", resolve));
  port = (server.address() as AddressInfo).port;
  const jpeg = await makePhotoJpeg(640, 480);
  body = Buffer.from(JSON.stringify({ base64: jpeg.toString("base64"), mimeType: "image/jpeg" }));
}, 60_000);
afterAll(async () => {
  configureBodySource(untouchedBody);
  await new Promise((resolve) => server?.close(resolve));
  await h?.close();
});

function upload(declared: boolean): Promise<{ status: number; json: any }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${apiKey}`, "content-type": "application/json" };
    if (declared) headers["content-length"] = String(body.length);
    const req = request({ host: "127.0.0.1", port, path: "/api/v1/social/media", method: "POST", headers, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
    });
    req.on("error", reject);
    // Two writes: a chunked request gets two chunks, a declared one arrives in pieces all the same.
    req.write(body.subarray(0, body.length >> 1));
    req.end(body.subarray(body.length >> 1));
  });
}

describe("inline-image bodies on Node", () => {
  it("a declared length is read from Node's own chunks; a chunked body through the web stream", async () => {
    direct.length = 0;
    const declared = await upload(true);
    const chunked = await upload(false);
    expect([declared.status, chunked.status]).toEqual([201, 201]);
    expect(declared.json.data).toMatchObject({ width: 640, height: 480 });
    expect(chunked.json.data).toMatchObject({ width: 640, height: 480, bytes: declared.json.data.bytes });
    expect(direct).toEqual([true, false]);
  }, 30_000);
});
