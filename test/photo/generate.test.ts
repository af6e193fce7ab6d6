/**
 * Area B generation through HTTP on the local compositor: exact sizes for every ratio and resolution, the
 * logo at each placement and size, texts inside the image, url output, batches with a bad item, the
 * ledger, idempotent replays and async jobs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eq } from "drizzle-orm";
import { generations, photoJobs } from "../../db/schema";
import { resumePhotoJobs, startDueAsyncJobs } from "../../src/photo/async-jobs";
import { LocalGenerator } from "../../src/photo/local";
import type { ImageGenerator } from "../../src/photo/types";
import { ASPECT_RATIOS, LOGO_PLACEMENTS, RESOLUTIONS } from "../../src/photo/types";
import { outputSize } from "../../src/photo/request";
import { runAdminCommand } from "../../functions/node/admin-commands";
import { bboxOf, dataUrl, decodePng, fromDataUri, logoDataUrl, MAGENTA, photoHarness, productDataUrl, productJpeg, type PhotoHarness } from "./fixtures";

let h: PhotoHarness;
let product: string;
let logo: string;

beforeAll(async () => {
  h = await photoHarness();
  product = await productDataUrl();
  logo = await logoDataUrl();
});
afterAll(() => h.close());

type Data = Record<string, any>;
async function ok(res: Response, status = 200): Promise<Data> {
  const body = (await res.json()) as { data: Data; error?: unknown };
  expect(res.status, JSON.stringify(body.error ?? "")).toBe(status);
  return body.data;
}

async function fetchFile(url: string): Promise<Buffer> {
  const res = await h.app.request(new URL(url).pathname);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe("output size", () => {
  it.each(RESOLUTIONS.flatMap((r) => ASPECT_RATIOS.map((a) => [r, a] as const)))("%s %s is exact to the pixel", async (resolution, aspectRatio) => {
    const data = await ok(await h.post({ productImages: [{ dataUrl: product }], promptId: "ecom-light-grey", model: "pro", resolution, aspectRatio }));
    const png = await decodePng(fromDataUri(data.photoDataUri));
    const expected = outputSize(resolution, aspectRatio);
    expect({ width: png.width, height: png.height }).toEqual(expected);
    expect(Math.max(png.width, png.height)).toBe({ "1K": 1024, "2K": 1536, "4K": 2048 }[resolution]);
    expect(data.width).toBe(expected.width);
    expect(data.cost).toEqual({ credits: 15, usd: 0.15, inr: 13.28 });
  });

  it("defaults: pro at 4K, 1:1, base64 PNG", async () => {
    const data = await ok(await h.post({ productImages: [{ dataUrl: product }], promptId: "studio-white-sweep" }));
    expect(data.photoDataUri).toMatch(/^data:image\/png;base64,/);
    const png = await decodePng(fromDataUri(data.photoDataUri));
    expect([png.width, png.height]).toEqual([2048, 2048]);
  });
});

describe("logo", () => {
  it.each(LOGO_PLACEMENTS)("is drawn at %s at the requested size", async (logoPlacement) => {
    const data = await ok(
      await h.post({ productImages: [{ dataUrl: product }], promptId: "studio-white-sweep", model: "standard", logoImage: logo, logoPlacement, logoSize: 0.2 }),
    );
    const png = await decodePng(fromDataUri(data.photoDataUri));
    const box = bboxOf(png, MAGENTA, 40);
    expect(box).not.toBeNull();
    // 0.2 x 1024 = 205 px wide, 2:1 -> 102 or 103 high; margins are 4 % of the short side (41 px).
    expect(Math.abs(box!.width - 205)).toBeLessThanOrEqual(2);
    expect(Math.abs(box!.height - 102)).toBeLessThanOrEqual(2);
    const [row, col] = logoPlacement === "center" ? ["center", "center"] : logoPlacement.split("-");
    const expectX = col === "left" ? 41 : col === "right" ? 1024 - 41 - 205 : (1024 - 205) / 2;
    const expectY = row === "top" ? 41 : row === "bottom" ? 1024 - 41 - 102 : (1024 - 102) / 2;
    expect(Math.abs(box!.x - expectX)).toBeLessThanOrEqual(2);
    expect(Math.abs(box!.y - expectY)).toBeLessThanOrEqual(2);
    expect(box!.count).toBeGreaterThan(205 * 100 * 0.95);
  });

  it("keeps a PNG logo's transparency", async () => {
    const sharp = (await import("sharp")).default;
    const ring = await sharp(
      Buffer.from(
        `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="200"><circle cx="100" cy="100" r="80" fill="none" stroke="#ff00ff" stroke-width="30"/></svg>`,
      ),
    )
      .png()
      .toBuffer();
    const data = await ok(
      await h.post({
        productImages: [{ dataUrl: product }],
        promptId: "studio-white-sweep",
        model: "standard",
        logoImage: `data:image/png;base64,${ring.toString("base64")}`,
        logoPlacement: "center",
        logoSize: 0.4,
      }),
    );
    const png = await decodePng(fromDataUri(data.photoDataUri));
    const centre = (512 * 1024 + 512) * png.channels;
    // The ring's hole shows the scene (the product), not magenta and not black.
    expect(png.data[centre + 1]).toBeGreaterThan(40);
    expect(bboxOf(png, MAGENTA, 40)!.width).toBeGreaterThan(300);
  });
});

describe("texts", () => {
  const bandsDiffer = async (texts: Record<string, string>) => {
    const body = { productImages: [{ dataUrl: product }], promptId: "studio-grey-gradient", model: "standard", aspectRatio: "4:5" };
    const plain = await decodePng(fromDataUri((await ok(await h.post(body))).photoDataUri));
    const withText = await decodePng(fromDataUri((await ok(await h.post({ ...body, ...texts }))).photoDataUri));
    const rows: number[] = [];
    for (let y = 0; y < plain.height; y++) {
      let changed = 0;
      for (let x = 0; x < plain.width; x++) {
        const i = (y * plain.width + x) * plain.channels;
        if (Math.abs(plain.data[i]! - withText.data[i]!) + Math.abs(plain.data[i + 1]! - withText.data[i + 1]!) > 60) changed++;
      }
      if (changed > 3) rows.push(y);
    }
    let left = plain.width;
    let right = -1;
    for (const y of rows) {
      for (let x = 0; x < plain.width; x++) {
        const i = (y * plain.width + x) * plain.channels;
        if (Math.abs(plain.data[i]! - withText.data[i]!) > 60) {
          left = Math.min(left, x);
          right = Math.max(right, x);
        }
      }
    }
    return { rows, left, right, height: plain.height, width: plain.width };
  };

  it.each([
    ["Latin", { overlayText: "Summer Sale -20%", marketingText: "Handmade in Jaipur. Free shipping on orders over ₹999, this week only." }],
    ["Devanagari", { overlayText: "दिवाली सेल", marketingText: "विचार कि हिंदी — सिर्फ़ ₹499 में, आज ही ऑर्डर करें" }],
  ])("%s overlay and marketing texts are drawn inside the image, top and bottom", async (_name, texts) => {
    const d = await bandsDiffer(texts);
    expect(d.rows.length).toBeGreaterThan(30);
    const top = d.rows.filter((y) => y < d.height / 3);
    const bottom = d.rows.filter((y) => y > (2 * d.height) / 3);
    expect(top.length).toBeGreaterThan(10);
    expect(bottom.length).toBeGreaterThan(10);
    // Nothing drawn on the outermost pixels: the text and its panel stay inside the margins.
    expect(Math.min(...d.rows)).toBeGreaterThan(0);
    expect(Math.max(...d.rows)).toBeLessThan(d.height - 1);
    expect(d.left).toBeGreaterThan(0);
    expect(d.right).toBeLessThan(d.width - 1);
  });

  it("a copy-space template puts the texts in its open space on the left", async () => {
    const body = { productImages: [{ dataUrl: product }], promptId: "ecom-copy-space", model: "standard", aspectRatio: "16:9" };
    const plain = await decodePng(fromDataUri((await ok(await h.post(body))).photoDataUri));
    const withText = await decodePng(
      fromDataUri((await ok(await h.post({ ...body, overlayText: "Summer Sale -30%", marketingText: "Free shipping this week" }))).photoDataUri),
    );
    let left = 0;
    let right = 0;
    for (let i = 0; i < plain.data.length; i += plain.channels) {
      if (Math.abs(plain.data[i]! - withText.data[i]!) > 60) (i / plain.channels) % plain.width < plain.width / 2 ? left++ : right++;
    }
    expect(left).toBeGreaterThan(2000);
    expect(right).toBe(0);
  });

  it("keeps the overlay text clear of a logo in the same band", async () => {
    const body = {
      productImages: [{ dataUrl: product }],
      promptId: "studio-grey-gradient",
      model: "standard",
      logoImage: logo,
      logoPlacement: "top-right",
      logoSize: 0.3,
    };
    const plain = await decodePng(fromDataUri((await ok(await h.post(body))).photoDataUri));
    const withText = await decodePng(fromDataUri((await ok(await h.post({ ...body, overlayText: "The Festive Collection Is Here" }))).photoDataUri));
    const logoBox = bboxOf(plain, MAGENTA, 40)!;
    let changed = 0;
    let onLogo = 0;
    for (let y = 0; y < plain.height; y++) {
      for (let x = 0; x < plain.width; x++) {
        const i = (y * plain.width + x) * plain.channels;
        if (Math.abs(plain.data[i]! - withText.data[i]!) + Math.abs(plain.data[i + 1]! - withText.data[i + 1]!) <= 60) continue;
        changed++;
        if (x >= logoBox.x && x < logoBox.x + logoBox.width && y >= logoBox.y && y < logoBox.y + logoBox.height) onLogo++;
      }
    }
    expect(changed).toBeGreaterThan(1000);
    expect(onLogo).toBe(0);
  });

  it("a long overlay text is wrapped or scaled, never cut", async () => {
    const d = await bandsDiffer({ overlayText: "The Festive Collection Is Here Now For Everyone" });
    expect(d.left).toBeGreaterThan(0);
    expect(d.right).toBeLessThan(d.width - 1);
  });
});

describe("url output", () => {
  it("stores the PNG and a smaller thumbnail, both loadable", async () => {
    const data = await ok(
      await h.post({
        productImages: [{ dataUrl: product }],
        promptId: "hol-diwali",
        model: "flash",
        resolution: "2K",
        aspectRatio: "3:2",
        outputResult: "url",
      }),
    );
    expect(data.photoDataUri).toBeUndefined();
    const image = await decodePng(await fetchFile(data.imageUrl));
    const thumb = await decodePng(await fetchFile(data.thumbnailUrl));
    expect([image.width, image.height]).toEqual([1536, 1024]);
    expect(thumb.width).toBeLessThan(image.width);
    expect(thumb.width / thumb.height).toBeCloseTo(1.5, 1);
  });
});

describe("batches and the ledger", () => {
  it("a batch of 10 on standard answers 10 items, a bad one alone, and records 9 images", async () => {
    const { apiKey, userId, email } = await h.createUser();
    const items = Array.from({ length: 10 }, (_, i) => ({ dataUrl: product, label: `sku-${i}` }));
    items[6] = { dataUrl: `data:image/png;base64,${Buffer.from("broken").toString("base64")}`, label: "sku-6" };
    const data = await ok(await h.post({ productImages: items, promptId: "ecom-pure-white", model: "standard", outputResult: "url" }, {}, apiKey));
    expect(data.images).toHaveLength(10);
    expect(data.images.map((i: Data) => i.label)).toEqual(items.map((i) => i.label));
    expect(data.images[6]).toMatchObject({ status: "failed", error: { code: "INVALID_IMAGE" } });
    expect(data.images[6].error.message).toContain("productImages.6.dataUrl");
    for (const [i, item] of data.images.entries())
      if (i !== 6) expect(item).toMatchObject({ status: "succeeded", imageUrl: expect.any(String), thumbnailUrl: expect.any(String) });
    expect(data.cost).toEqual({ credits: 36, usd: 0.351, inr: 31.05 });
    const rows = await h.db.select().from(generations).where(eq(generations.userId, userId));
    expect(rows).toHaveLength(9);
    expect(rows.every((r) => r.model === "standard" && r.resolution === "1K" && r.credits === 4 && r.usd === "0.0390" && r.inr === "3.45")).toBe(true);
    // `npm run admin -- usage --email E` prints the same totals.
    const usage = await runAdminCommand(h.db, { command: "usage", email });
    expect(usage.output.split("\n")).toEqual([
      "model\tresolution\timages\tcredits\tusd\tinr",
      "standard\t1K\t9\t36\t0.3510\t31.05",
      "total\t\t9\t36\t0.3510\t31.05",
    ]);
  });
});

describe("idempotency", () => {
  it("replays the stored result for the same key and body, without a second charge; another body is 409", async () => {
    const { apiKey, userId } = await h.createUser();
    const body = { productImages: [{ dataUrl: product }], promptId: "life-kitchen", model: "standard", overlayText: "New" };
    const first = await h.post(body, { "Idempotency-Key": "photo-1" }, apiKey);
    const a = await ok(first);
    const second = await h.post(body, { "Idempotency-Key": "photo-1" }, apiKey);
    const b = await ok(second);
    expect(second.headers.get("idempotency-replayed")).toBe("true");
    expect(b.photoDataUri).toBe(a.photoDataUri);
    expect(await h.db.select().from(generations).where(eq(generations.userId, userId))).toHaveLength(1);
    const other = await h.post({ ...body, overlayText: "Old" }, { "Idempotency-Key": "photo-1" }, apiKey);
    expect(other.status).toBe(409);
    expect(((await other.json()) as { error: { code: string } }).error.code).toBe("IDEMPOTENCY_KEY_REUSED");
    // Keys belong to their user: another user may use the same key for their own request.
    expect((await h.post(body, { "Idempotency-Key": "photo-1" })).status).toBe(200);
  });

  it("an inline image counts by its bytes: the same image spelled another way replays, another image is 409", async () => {
    const { apiKey } = await h.createUser();
    const body = { productImages: [{ dataUrl: product }], promptId: "life-kitchen", model: "standard" };
    expect((await h.post(body, { "Idempotency-Key": "photo-3" }, apiKey)).status).toBe(200);
    const [header, b64] = product.split(",") as [string, string];
    const wrapped = { ...body, productImages: [{ dataUrl: `${header},${b64.replace(/(.{76})/g, "$1\n")}` }] };
    const again = await h.post(wrapped, { "Idempotency-Key": "photo-3" }, apiKey);
    expect(again.headers.get("idempotency-replayed")).toBe("true");
    const other = await dataUrl(await productJpeg(640, 800));
    const conflict = await h.post({ ...body, productImages: [{ dataUrl: other }] }, { "Idempotency-Key": "photo-3" }, apiKey);
    expect(((await conflict.json()) as { error: { code: string } }).error.code).toBe("IDEMPOTENCY_KEY_REUSED");
  });

  it("the same body with and without Prefer: respond-async under one key is 409 saying the mode differs", async () => {
    const { apiKey } = await h.createUser();
    const body = { productImages: [{ dataUrl: product }], promptId: "life-kitchen", model: "standard" };
    expect((await h.post(body, { "Idempotency-Key": "photo-4", Prefer: "respond-async" }, apiKey)).status).toBe(202);
    const sync = await h.post(body, { "Idempotency-Key": "photo-4" }, apiKey);
    expect(sync.status).toBe(409);
    const err = ((await sync.json()) as { error: { code: string; message: string } }).error;
    expect(err.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(err.message).toMatch(/first used with Prefer: respond-async/);
    expect(err.message).not.toMatch(/different request body/);
    // Sent the same way, it replays.
    expect((await h.post(body, { "Idempotency-Key": "photo-4", Prefer: "respond-async" }, apiKey)).status).toBe(202);
  });

  it("a request refused as invalid releases its key", async () => {
    const bad = await h.post(
      { productImages: [{ url: "https://127.0.0.1/a.png" }], promptId: "life-kitchen", model: "standard" },
      { "Idempotency-Key": "photo-2" },
    );
    expect(bad.status).toBe(422);
    expect(
      (await h.post({ productImages: [{ dataUrl: product }], promptId: "life-kitchen", model: "standard" }, { "Idempotency-Key": "photo-2" })).status,
    ).toBe(200);
  });
});

describe("async jobs", () => {
  it("Prefer: respond-async answers 202 with a job that reaches succeeded, for its owner only", async () => {
    const res = await h.post(
      {
        productImages: [
          { dataUrl: product, label: "a" },
          { dataUrl: product, label: "b" },
        ],
        promptId: "hol-christmas",
        model: "flash",
        resolution: "1K",
        outputResult: "url",
      },
      { Prefer: "respond-async" },
    );
    const job = await ok(res, 202);
    expect(res.headers.get("preference-applied")).toBe("respond-async");
    const location = res.headers.get("location")!;
    expect(location).toBe(`/api/image/product-photography/jobs/${job.id}`);
    let state: Data = job;
    for (let i = 0; i < 100 && state.status !== "succeeded" && state.status !== "failed"; i++) {
      await new Promise((r) => setTimeout(r, 100));
      state = await ok(await h.app.request(location, { headers: h.auth(h.apiKey) }));
    }
    expect(state.status).toBe("succeeded");
    expect(state.result.images).toHaveLength(2);
    expect(state.result.images[1]).toMatchObject({ label: "b", status: "succeeded" });
    await fetchFile(state.result.images[0].imageUrl);
    const stranger = await h.createUser();
    expect((await h.app.request(location, { headers: h.auth(stranger.apiKey) })).status).toBe(404);
    const malformed = await h.app.request("/api/image/product-photography/jobs/not-a-uuid", { headers: h.auth(h.apiKey) });
    expect(malformed.status).toBe(422);
    expect(((await malformed.json()) as { error: { details: unknown[] } }).error.details).toEqual([
      { path: "id", message: "must be a job id: the UUID `id` of a 202 answer (its Location ends with it)" },
    ]);
  });
});

/** A generator whose runner hangs (as if its process had died) until `release`, then fails. */
function hangingGenerator(): { hanging: ImageGenerator; release: () => void } {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const hanging: ImageGenerator = {
    name: "local",
    generateScene: async () => {
      await released;
      throw new Error("the old runner woke up");
    },
  };
  return { hanging, release };
}

/** Waits (up to 2 s) until the job's runner has taken it. */
async function untilRunning(c: PhotoHarness, jobId: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const [row] = await c.db.select().from(photoJobs).where(eq(photoJobs.id, jobId));
    if (row!.status === "running") return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("async jobs after a crash", () => {
  it("the sweep restarts a job whose runner died; the dead runner's late outcome is not recorded and nothing is charged twice", async () => {
    const local = LocalGenerator();
    // The first runner hangs (its process "died"); it wakes only after the job was taken over, then fails.
    const { hanging, release } = hangingGenerator();
    const c = await photoHarness({ overrides: { generator: hanging } });
    try {
      const res = await c.post(
        { productImages: [{ dataUrl: product }], promptId: "out-beach", model: "standard", outputResult: "url" },
        { Prefer: "respond-async" },
      );
      const job = await ok(res, 202);
      await untilRunning(c, job.id);
      await c.db
        .update(photoJobs)
        .set({ lockedUntil: new Date(Date.now() - 60_000) })
        .where(eq(photoJobs.id, job.id));
      c.services.generator = local;
      expect(await resumePhotoJobs(c.services)).toBe(1);
      let state: Data = job;
      // The resumed job runs in a heavy-work thread that may have to start first: allow for a slow machine.
      for (let i = 0; i < 600 && state.status !== "succeeded"; i++) {
        await new Promise((r) => setTimeout(r, 50));
        state = await ok(await c.app.request(`/api/image/product-photography/jobs/${job.id}`, { headers: c.auth(c.apiKey) }));
      }
      expect(state.status).toBe("succeeded");
      release();
      await c.drain();
      const [row] = await c.db.select().from(photoJobs).where(eq(photoJobs.id, job.id));
      expect(row!.status).toBe("succeeded");
      expect(row!.attempts).toBe(2);
      expect(await c.db.select().from(generations).where(eq(generations.jobId, job.id))).toHaveLength(1);
    } finally {
      release();
      await c.close();
    }
  }, 90_000);

  it("a job whose runner died on its last attempt is not started again: the sweep fails it for good and gives its credits back", async () => {
    const { hanging, release } = hangingGenerator();
    const c = await photoHarness({ overrides: { generator: hanging } });
    const credits = async () => (await ok(await c.app.request("/api/image/credits", { headers: c.auth(c.apiKey) }))) as Data;
    try {
      const before = await credits();
      const job = await ok(
        await c.post({ productImages: [{ dataUrl: product }], promptId: "out-beach", model: "standard", outputResult: "url" }, { Prefer: "respond-async" }),
        202,
      );
      await untilRunning(c, job.id);
      expect((await credits()).reserved).toBeGreaterThan(before.reserved);
      // Its third runner died: the lock ran out with every attempt used.
      await c.db
        .update(photoJobs)
        .set({ lockedUntil: new Date(Date.now() - 60_000), attempts: 3 })
        .where(eq(photoJobs.id, job.id));
      expect(await startDueAsyncJobs(c.services)).toBe(0);
      await resumePhotoJobs(c.services);
      const state = await ok(await c.app.request(`/api/image/product-photography/jobs/${job.id}`, { headers: c.auth(c.apiKey) }));
      expect(state).toMatchObject({ status: "failed", error: { code: "GENERATION_FAILED" } });
      expect(await credits()).toMatchObject({ balance: before.balance, reserved: before.reserved });
      expect(await c.db.select().from(generations).where(eq(generations.jobId, job.id))).toHaveLength(0);
    } finally {
      release();
      await c.drain();
      await c.close();
    }
  }, 90_000);
});
