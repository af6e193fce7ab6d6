/**
 * The edge's pixel limit (EDGE_DECODE_LIMITS.maxPixels, src/images/limits.ts) on every image path, in the
 * Worker built as deployed: wrangler.toml's [vars] and the secrets it lists (values from the local stand-ins),
 * run in workerd. Each path gets, by base64 and by URL, tiny files whose headers say 40 MP (a JPEG and a PNG),
 * and a real JPEG a little over the limit: each answers 422 INVALID_IMAGE naming the limit and the image's
 * size, from the header (the tiny files hold no such image, so a decode would fail otherwise). Area B is run
 * on the local compositor and on Replicate (its token set; nothing reaches Replicate). The Node app, which
 * has no such limit, takes the same real JPEG on every path and does not refuse the 40 MP headers for size.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFetchMock } from "miniflare";
import sharp from "sharp";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { EDGE_DECODE_LIMITS } from "../../src/edge-services";
import { startLocalEdge, type LocalEdge } from "../../dev/edge-worker";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { createTestApp, type TestApp } from "../helpers/harness";
import { makeJpeg, patchJpegSize, pngHeaderOnly } from "../helpers/images";
import { listedSecrets } from "../helpers/wrangler-secrets";

const IMAGE_HOST = "https://cdn.shopfront-images.com";
const FULL = { width: 7300, height: 5479 };
/** A real image a little over the edge's limit, 4:3. */
const OVER = { width: 4200, height: 3150 };
const LIMIT_TEXT = `accepts images up to ${EDGE_DECODE_LIMITS.maxPixels / 1e6} million pixels`;

interface Image {
  name: string;
  mime: string;
  bytes: Buffer;
  width: number;
  height: number;
}

const images: Image[] = [];
let edge: LocalEdge;
let scratch: ScratchDatabase;
let handle: DbHandle;
let edgeKey: string;
let node: TestApp;
let nodeKey: string;
let production: Record<string, string>;
/** A small product photo, beside the logo or reference image under test. */
let small: string;

beforeAll(async () => {
  expect(OVER.width * OVER.height).toBeGreaterThan(EDGE_DECODE_LIMITS.maxPixels);
  expect(4032 * 3024).toBeLessThanOrEqual(EDGE_DECODE_LIMITS.maxPixels);
  small = `data:image/jpeg;base64,${(await makeJpeg(600, 800)).toString("base64")}`;
  const photo = await sharp({ create: { ...OVER, channels: 3, background: "#7a9" } })
    .jpeg({ quality: 80 })
    .toBuffer();
  images.push(
    { name: "JPEG 40 MP (header)", mime: "image/jpeg", bytes: patchJpegSize(await makeJpeg(64, 48), FULL.width, FULL.height), ...FULL },
    { name: "PNG 40 MP (header)", mime: "image/png", bytes: pngHeaderOnly(FULL.width, FULL.height), ...FULL },
    { name: `JPEG ${OVER.width}x${OVER.height}`, mime: "image/jpeg", bytes: photo, ...OVER },
  );

  const secrets = await listedSecrets();
  scratch = await createScratchDatabase();
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  const { userId } = await createUser(handle.db, `edge-limit-${crypto.randomUUID()}@example.test`);
  edgeKey = (await createApiKey(handle.db, userId)).key;

  const fetchMock = createFetchMock();
  fetchMock.disableNetConnect();
  fetchMock.enableNetConnect(/^127\.0\.0\.1(:\d+)?$/);
  for (const [i, image] of images.entries()) {
    fetchMock
      .get(IMAGE_HOST)
      .intercept({ path: `/${i}` })
      .reply(200, image.bytes, { headers: { "content-type": image.mime } })
      .persist();
  }
  edge = await startLocalEdge({
    databaseUrl: scratch.url,
    fetchMock,
    bindings: (standard, wranglerVars) => {
      production = {
        ...wranglerVars,
        PHOTO_SIGNUP_CREDITS: "1000000",
        NEON_WS_PROXY: standard.NEON_WS_PROXY!,
        ...Object.fromEntries(secrets.required.map((n) => [n, standard[n]!])),
      };
      return production;
    },
  });
  node = await createTestApp();
  ({ apiKey: nodeKey } = await node.createUser());
}, 120_000);

afterAll(async () => {
  const steps: Array<() => unknown> = [() => edge?.dispose(), () => handle?.close(), () => scratch?.drop(), () => node?.close()];
  for (const step of steps)
    await Promise.resolve()
      .then(() => step())
      .catch(() => {});
});

type Send = (path: string, body: unknown) => Promise<{ status: number; json: any }>;

const sendToEdge: Send = async (path, body) => {
  const res = await edge.mf.dispatchFetch(`https://api.example.test${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${edgeKey}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
};

const sendToNode: Send = async (path, body) => {
  const res = await node.app.request(path, { method: "POST", headers: node.json(nodeKey), body: JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
};

const dataUri = (image: Image) => `data:${image.mime};base64,${image.bytes.toString("base64")}`;
const urlOf = (image: Image) => `${IMAGE_HOST}/${images.indexOf(image)}`;

/** Each image path with the image in `source` (a data URI or an https URL). */
const PATHS: Array<{ name: string; url: boolean; send: (send: Send, source: string) => ReturnType<Send> }> = [
  { name: "media (base64)", url: false, send: (send, source) => send("/api/v1/social/media", { base64: source }) },
  { name: "media (url)", url: true, send: (send, source) => send("/api/v1/social/media", { url: source }) },
  { name: "QR decode (base64)", url: false, send: (send, source) => send("/api/qr-code/decode", { base64: source }) },
  { name: "QR decode (url)", url: true, send: (send, source) => send("/api/qr-code/decode", { url: source }) },
  { name: "QR logo", url: false, send: (send, source) => send("/api/qr-code/generate", { type: "text", value: "edge limit", logoUrl: source }) },
  { name: "QR logo (url)", url: true, send: (send, source) => send("/api/qr-code/generate", { type: "text", value: "edge limit", logoUrl: source }) },
  ...photoPaths(),
];

function photoPaths() {
  const photo = (body: (source: string) => Record<string, unknown>) => (send: Send, source: string) =>
    send("/api/image/product-photography", { promptId: "studio-white-sweep", productImages: [{ dataUrl: small }], ...body(source) });
  return [
    { name: "product image", url: false, send: photo((source) => ({ productImages: [{ dataUrl: source }] })) },
    { name: "product image (url)", url: true, send: photo((source) => ({ productImages: [{ url: source }] })) },
    { name: "photo logo", url: false, send: photo((source) => ({ logoImage: source })) },
    { name: "reference image", url: true, send: photo((source) => ({ referenceImage: source })) },
  ];
}

describe("the Worker as deployed refuses images over its pixel limit on every path, from the header", () => {
  for (const path of PATHS) {
    it(`${path.name}: 422 naming the limit and the image's size`, async () => {
      for (const image of images) {
        const res = await path.send(sendToEdge, path.url ? urlOf(image) : dataUri(image));
        expect(res.status, `${image.name}: ${JSON.stringify(res.json).slice(0, 300)}`).toBe(422);
        expect(res.json.error.code).toBe("INVALID_IMAGE");
        expect(res.json.error.message).toContain(`${image.width}x${image.height}`);
        expect(res.json.error.message).toContain(LIMIT_TEXT);
      }
    });
  }

  it("area B on Replicate refuses them too, before anything reaches Replicate", async () => {
    await edge.setBindings({ ...production, REPLICATE_API_TOKEN: "r8_production_token" });
    try {
      for (const path of PATHS.filter((p) => /product|photo|reference/.test(p.name))) {
        for (const image of images) {
          const res = await path.send(sendToEdge, path.url ? urlOf(image) : dataUri(image));
          expect(res.status, `${path.name}, ${image.name}: ${JSON.stringify(res.json).slice(0, 300)}`).toBe(422);
          expect(res.json.error.message).toContain(LIMIT_TEXT);
        }
      }
    } finally {
      await edge.setBindings(production);
    }
  });
});

describe("the Node app has no such limit", () => {
  const base64Paths = PATHS.filter((p) => !p.url);
  for (const path of base64Paths) {
    it(`${path.name}: takes the image over the edge's limit and refuses no 40 MP header for its size`, async () => {
      const photo = images[2]!;
      const res = await path.send(sendToNode, dataUri(photo));
      // The flat photo holds no QR code: reading it is a 422 QR_NOT_FOUND after the whole decode.
      const outcome = res.status === 422 ? res.json.error.code : res.status;
      expect(outcome, JSON.stringify(res.json).slice(0, 300)).toSatisfy((v) => v === "QR_NOT_FOUND" || (v as number) < 300);
      for (const image of images.slice(0, 2)) {
        const header = await path.send(sendToNode, dataUri(image));
        expect(header.status, image.name).toBeLessThan(500);
        expect(JSON.stringify(header.json), image.name).not.toMatch(/million pixels/);
      }
    }, 60_000);
  }
});
