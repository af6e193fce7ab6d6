import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createNodeFetcher } from "../../functions/node/safe-fetch";
import { loadImageBytes, sniffImage } from "../../src/images";
import type { SafeFetcher } from "../../src/services";
import { startImageServer, type ImageServer } from "../helpers/image-server";
import { haveSystemTool } from "../helpers/system-tools";
import { makePng } from "../helpers/images";

let server: ImageServer;
let png: Buffer;

// The loopback HTTPS image server's certificate is made by openssl: without it every case is skipped.
const haveOpenssl = haveSystemTool("images/load", "openssl");
beforeEach(({ skip }) => skip(!haveOpenssl));

beforeAll(async () => {
  if (!haveOpenssl) return;
  server = await startImageServer();
  png = await makePng(12, 8);
  server.route("/logo.png", (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(png));
});
afterAll(() => server?.close());

const never: SafeFetcher = {
  fetchBytes: () => Promise.reject(new Error("must not fetch")),
  postWebhook: () => Promise.reject(new Error("must not send")),
};

describe("loadImageBytes", () => {
  it("loads from a URL through the fetcher", async () => {
    const fetcher = createNodeFetcher({ testAllow: { origins: [server.origin], ca: server.ca } });
    const bytes = await loadImageBytes(fetcher, { url: server.url("/logo.png") });
    expect(sniffImage(bytes)).toMatchObject({ format: "png", width: 12, height: 8 });
    await fetcher.close();
  });

  it("loads Base64 and data URIs without fetching", async () => {
    const b64 = png.toString("base64");
    expect((await loadImageBytes(never, { base64: b64 })).length).toBe(png.length);
    expect((await loadImageBytes(never, { dataUri: `data:image/png;base64,${b64}` })).length).toBe(png.length);
  });

  it("needs exactly one source", async () => {
    await expect(loadImageBytes(never, {})).rejects.toMatchObject({ code: "VALIDATION_FAILED", status: 422 });
    await expect(loadImageBytes(never, { url: "https://a.example.com/x.png", base64: "AAAA" })).rejects.toMatchObject({ code: "VALIDATION_FAILED" });
  });

  it("passes on the fetcher's refusals", async () => {
    const fetcher = createNodeFetcher();
    await expect(loadImageBytes(fetcher, { url: "https://10.0.0.1/x.png" })).rejects.toMatchObject({ code: "INVALID_IMAGE_URL", status: 422 });
    await fetcher.close();
  });
});
