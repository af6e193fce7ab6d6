/**
 * POST /media over a real socket (`functions/node.ts`). A body with a declared length is read from Node's own
 * chunks (functions/node/drain-body.ts `untouchedBody`); a chunked one through the request's web stream. Both
 * must give the same media, however the bytes are cut and paced; a body with bad Base64 part way is the
 * same 422 either way; and a client that goes away half-way through its body leaves the server serving, with
 * nothing logged as an error of ours.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "node:http";
import { makePhotoJpeg } from "../helpers/images";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";

let server: ServerProcess;
let body: Buffer;

beforeAll(async () => {
  server = await startServerProcess({ env: { RATE_LIMIT_SOCIAL_WRITE: "1000" } });
  const jpeg = await makePhotoJpeg(1600, 1200);
  body = Buffer.from(JSON.stringify({ base64: jpeg.toString("base64"), mimeType: "image/jpeg" }));
}, 120_000);
afterAll(async () => {
  await server?.dispose();
});

interface Sent {
  /** Declare the length (Content-Length) or send the body chunked (Transfer-Encoding: chunked). */
  declared: boolean;
  /** Bytes per write. */
  piece: number;
  /** Pause after every this many writes (ms 5), to let the server read a partial body. */
  pauseEvery?: number;
}

/** Sends `payload` to POST /api/v1/social/media as told and returns the status and parsed answer. */
function upload(payload: Buffer, sent: Sent): Promise<{ status: number; json: any }> {
  const url = new URL("/api/v1/social/media", server.baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { authorization: `Bearer ${server.apiKey}`, "content-type": "application/json" };
    if (sent.declared) headers["content-length"] = String(payload.length);
    const req = request(url, { method: "POST", headers, agent: false }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (d) => (text += d));
      res.on("end", () => resolve({ status: res.statusCode!, json: JSON.parse(text) }));
    });
    req.on("error", reject);
    void (async () => {
      let writes = 0;
      for (let at = 0; at < payload.length; at += sent.piece) {
        if (!req.write(payload.subarray(at, at + sent.piece))) await new Promise((r) => req.once("drain", r));
        if (sent.pauseEvery && ++writes % sent.pauseEvery === 0) await new Promise((r) => setTimeout(r, 5));
      }
      req.end();
    })();
  });
}

/** What two uploads of one image must share (ids and URLs differ). */
const shape = (json: any) => ({ width: json.data.width, height: json.data.height, bytes: json.data.bytes, mimeType: json.data.mimeType });

describe("POST /media over a real socket", () => {
  it("a declared-length body and a chunked one give the same media, in one write or in paced pieces", async () => {
    const whole = await upload(body, { declared: true, piece: body.length });
    expect(whole.status).toBe(201);
    expect(shape(whole.json)).toMatchObject({ width: 1440, height: 1080, mimeType: "image/jpeg" });
    for (const sent of [
      { declared: true, piece: 1000, pauseEvery: 50 },
      { declared: true, piece: 7, pauseEvery: 4000 },
      { declared: false, piece: body.length },
      { declared: false, piece: 1000, pauseEvery: 50 },
    ]) {
      const answer = await upload(body, sent);
      expect({ sent, status: answer.status }).toEqual({ sent, status: 201 });
      expect(shape(answer.json)).toEqual(shape(whole.json));
    }
  }, 120_000);

  it("bad Base64 part way is the same 422 either way", async () => {
    const bad = Buffer.from(body);
    bad[Math.floor(bad.length / 2)] = 0x2a; // "*"
    const declared = await upload(bad, { declared: true, piece: 4096 });
    const chunked = await upload(bad, { declared: false, piece: 4096 });
    expect(declared.status).toBe(422);
    expect(chunked.status).toBe(422);
    expect(chunked.json).toEqual(declared.json);
    expect(declared.json.error.code).toBe("INVALID_IMAGE");
  }, 60_000);

  it.each([true, false])(
    "a client gone half-way through its body (declared length: %s) leaves the server answering the next upload",
    async (declared) => {
      const url = new URL("/api/v1/social/media", server.baseUrl);
      const from = server.output().length;
      await new Promise<void>((resolve) => {
        const req = request(url, {
          method: "POST",
          agent: false,
          headers: {
            authorization: `Bearer ${server.apiKey}`,
            "content-type": "application/json",
            ...(declared ? { "content-length": String(body.length) } : {}),
          },
        });
        req.on("error", () => resolve());
        req.on("response", () => resolve());
        req.write(body.subarray(0, body.length >> 1), () => setTimeout(() => req.destroy(), 50));
      });
      const next = await upload(body, { declared: true, piece: 65536 });
      expect(next.status).toBe(201);
      expect(next.json.data.width).toBe(1440);
      // Logged as the client's doing (a 400 nobody reads), not as an error of ours.
      const log = server.output().slice(from);
      expect(log).not.toMatch(/unhandled|uncaught|"level":"error"/i);
      expect(log).toMatch(/"path":"\/api\/v1\/social\/media","status":400/);
    },
    60_000,
  );
});
