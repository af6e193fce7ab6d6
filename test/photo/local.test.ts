/**
 * The local compositor: segmentation against known masks (plain, grey, gradient and JPEG backgrounds, own
 * alpha, a textured background kept whole, the demo render), and scenes: exact size and opacity for several
 * aspect ratios, the product where the layout puts it, template palettes, and a reference's palette.
 */
import sharp from "sharp";
import { describe, expect, it } from "vitest";
import { decodeImage, encodePng, type RgbaImage } from "../../src/images";
import { TEMPLATES } from "../../src/photo/catalog";
import { cutOut, LocalGenerator, renderDemoProduct, sceneStyleFor, styleFromReference, TEMPLATE_STYLES } from "../../src/photo/local";
import { encodeScenePng } from "../../src/photo/local/png";
import type { AspectRatio, ModelOption, SceneRequest } from "../../src/photo/types";
import { productJpeg } from "./fixtures";

type Rgb = [number, number, number];

/** A test product: a rounded body plus a cap, as a boolean mask. */
function productMask(w: number, h: number): Uint8Array {
  const m = new Uint8Array(w * h);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const body = Math.abs(x - w * 0.5) < w * 0.2 && y > h * 0.35 && y < h * 0.85;
      const shoulder = ((x - w * 0.5) / (w * 0.2)) ** 2 + ((y - h * 0.35) / (h * 0.08)) ** 2 < 1;
      const cap = Math.abs(x - w * 0.5) < w * 0.07 && y > h * 0.15 && y <= h * 0.3;
      m[y * w + x] = body || shoulder || cap ? 1 : 0;
    }
  }
  return m;
}

/** Draws the mask in `fg` (with a little shading) over a background given per pixel. */
function paint(w: number, h: number, mask: Uint8Array, fg: Rgb, bg: (x: number, y: number) => Rgb): RgbaImage {
  const data = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const i = (y * w + x) * 4;
      const shade = 0.85 + 0.15 * Math.cos((x / w - 0.5) * Math.PI * 2);
      const c = mask[y * w + x] ? fg.map((v) => v * shade) : bg(x, y);
      data.set([c[0]!, c[1]!, c[2]!, 255], i);
    }
  }
  return { width: w, height: h, data };
}

/** Intersection over union of the cut-out's alpha (> 50 %) with the true mask. */
function iou(cut: ReturnType<typeof cutOut>, truth: Uint8Array, w: number, h: number): number {
  let inter = 0;
  let union = 0;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const cx = x - cut.x;
      const cy = y - cut.y;
      const inside = cx >= 0 && cy >= 0 && cx < cut.image.width && cy < cut.image.height;
      const a = inside && cut.image.data[(cy * cut.image.width + cx) * 4 + 3]! > 127 ? 1 : 0;
      const t = truth[y * w + x]!;
      inter += a & t;
      union += a | t;
    }
  }
  return inter / union;
}

const MODEL = { model: "pro" } as ModelOption;
async function scene(product: Uint8Array, options: Partial<SceneRequest> & { width: number; height: number }): Promise<RgbaImage> {
  return LocalGenerator().generateScene({
    product: { bytes: product, mimeType: "image/png", width: 0, height: 0, url: "" },
    prompt: "",
    model: MODEL,
    resolution: "1K",
    aspectRatio: "1:1" as AspectRatio,
    ...options,
  });
}

/** Bounding box of pixels near `rgb`. */
function findColour(img: RgbaImage, rgb: Rgb, tolerance = 30) {
  let x0 = Infinity;
  let x1 = -1;
  let y0 = Infinity;
  let y1 = -1;
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const i = (y * img.width + x) * 4;
      if (
        Math.abs(img.data[i]! - rgb[0]) <= tolerance &&
        Math.abs(img.data[i + 1]! - rgb[1]) <= tolerance &&
        Math.abs(img.data[i + 2]! - rgb[2]) <= tolerance
      ) {
        x0 = Math.min(x0, x);
        x1 = Math.max(x1, x);
        y0 = Math.min(y0, y);
        y1 = Math.max(y1, y);
      }
    }
  }
  return x1 < 0 ? null : { cx: (x0 + x1) / 2, cy: (y0 + y1) / 2, width: x1 - x0 + 1, height: y1 - y0 + 1 };
}

function meanOf(img: RgbaImage, rows: [number, number] = [0, 1]): Rgb {
  const sum = [0, 0, 0];
  let n = 0;
  for (let y = Math.floor(img.height * rows[0]); y < Math.floor(img.height * rows[1]); y++) {
    for (let x = 0; x < img.width; x++) {
      const i = (y * img.width + x) * 4;
      for (let k = 0; k < 3; k++) sum[k]! += img.data[i + k]!;
      n++;
    }
  }
  return sum.map((v) => v / n) as Rgb;
}

const TEAL: Rgb = [31, 138, 138];

describe("cutOut", () => {
  const w = 320;
  const h = 400;
  const truth = productMask(w, h);
  const backgrounds: Array<[string, (x: number, y: number) => Rgb]> = [
    ["plain white", () => [255, 255, 255]],
    ["light grey", () => [228, 228, 226]],
    [
      "near-plain gradient with vignette",
      (x, y) => {
        const v = 238 - 30 * (y / h) - 12 * (x / w - 0.5) ** 2;
        return [v, v - 2, v - 5];
      },
    ],
  ];
  for (const [name, bg] of backgrounds) {
    it(`finds the product on a ${name} background (IoU > 0.9)`, () => {
      const cut = cutOut(paint(w, h, truth, TEAL, bg));
      expect(cut.foundBackground).toBe(true);
      expect(iou(cut, truth, w, h)).toBeGreaterThan(0.9);
    });
  }

  it("cuts a large photo (flooded at reduced scale, outline decided at full resolution) as precisely", () => {
    const W = 1200;
    const H = 1500;
    const big = productMask(W, H);
    for (let y = Math.round(H * 0.05); y < H * 0.15; y++) for (let x = W / 2 - 2; x < W / 2 + 2; x++) big[y * W + x] = 1; // a 4 px antenna
    const cut = cutOut(paint(W, H, big, TEAL, (_x, y) => [240 - (20 * y) / H, 240 - (20 * y) / H, 236 - (20 * y) / H]));
    expect(cut.foundBackground).toBe(true);
    expect(iou(cut, big, W, H)).toBeGreaterThan(0.97);
    expect(cut.y).toBeLessThan(H * 0.05 + 3); // the thin antenna survived
  });

  it("finds the product in a JPEG (compression noise and ringing)", async () => {
    const img = paint(w, h, truth, [180, 40, 60], () => [240, 239, 236]);
    const jpeg = await sharp(Buffer.from(img.data), { raw: { width: w, height: h, channels: 4 } })
      .jpeg({ quality: 75 })
      .toBuffer();
    const cut = cutOut(decodeImage(jpeg));
    expect(cut.foundBackground).toBe(true);
    expect(iou(cut, truth, w, h)).toBeGreaterThan(0.9);
  });

  it("leaves the product's soft shadow behind", () => {
    const img = paint(w, h, truth, TEAL, (x, y) => {
      // A soft elliptical shadow under the base, as a studio light leaves it.
      const v = 245 * (1 - 0.45 * Math.exp(-(((x - w / 2) / (w * 0.3)) ** 2) - ((y - h * 0.86) / (h * 0.03)) ** 2));
      return [v, v, v - 2];
    });
    const cut = cutOut(img);
    expect(iou(cut, truth, w, h)).toBeGreaterThan(0.9);
    expect(cut.y + cut.image.height).toBeLessThan(h * 0.85 + 3);
  });

  it("keeps a white part that a thin grey outline separates from a light background", () => {
    // A red upper on a white sole (grey outline) on light grey, over a soft shadow.
    const W = 450;
    const H = 300;
    const shoe = new Uint8Array(W * H);
    const img = paint(W, H, shoe, TEAL, (x, y) => {
      const v = 1 - 0.3 * Math.exp(-(((x - 225) / 170) ** 4) - ((y - 236) / 6) ** 2);
      return [233 * v, 233 * v, 231 * v];
    });
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const i = (y * W + x) * 4;
        const upper = x > 70 && x < 390 && y > 130 && y < 222 && ((x - 230) / 160) ** 2 + ((y - 222) / 92) ** 2 < 1;
        const sole = x >= 62 && x <= 392 && y >= 220 && y <= 235;
        const outline = sole && (x < 64 || x > 390 || y < 222 || y > 233);
        if (upper) img.data.set([192, 57, 43], i);
        else if (outline) img.data.set([187, 187, 187], i);
        else if (sole) img.data.set([245, 245, 245], i);
      }
    }
    const cut = cutOut(img);
    const alphaAt = (x: number, y: number) => cut.image.data[((y - cut.y) * cut.image.width + (x - cut.x)) * 4 + 3]!;
    expect(alphaAt(225, 228)).toBeGreaterThan(200); // the white sole
    expect(cut.y + cut.image.height).toBeLessThan(238); // nothing of the shadow below it
    expect(cut.x).toBeGreaterThan(58);
  });

  it("keeps an image's own meaningful alpha, trimmed to the product", () => {
    const img = paint(w, h, truth, TEAL, () => [0, 0, 0]);
    for (let p = 0; p < w * h; p++) img.data[p * 4 + 3] = truth[p] ? 255 : 0;
    img.data[(200 * w + 100) * 4 + 3] = 90; // a soft edge pixel inside the box stays as it is
    const cut = cutOut(img);
    expect(cut.foundBackground).toBe(true);
    expect(iou(cut, truth, w, h)).toBeGreaterThan(0.99);
    expect(cut.image.data[((200 - cut.y) * cut.image.width + (100 - cut.x)) * 4 + 3]).toBe(90);
  });

  it("keeps a photo whose background is not plain whole instead of chewing it up", () => {
    let seed = 7;
    const noise = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 255;
    const img = paint(w, h, truth, TEAL, () => [noise(), noise(), noise()]);
    const cut = cutOut(img);
    expect(cut.foundBackground).toBe(false);
    expect([cut.image.width, cut.image.height]).toEqual([w, h]);
    expect(cut.image.data.every((v, i) => i % 4 !== 3 || v === 255)).toBe(true);
  });

  it("cuts the demo product out cleanly, without its shadow", () => {
    const demo = renderDemoProduct(400); // bottle from x 124..276, y 60..452 (design units of 4 px)
    const cut = cutOut(demo);
    expect(cut.foundBackground).toBe(true);
    expect(cut.image.width).toBeGreaterThan(148);
    expect(cut.image.width).toBeLessThan(160);
    expect(cut.y).toBeGreaterThan(54);
    expect(cut.y + cut.image.height).toBeLessThan(458);
    // No background left around it: the corners of the box are transparent.
    expect(cut.image.data[3]).toBe(0);
    expect(cut.image.data[(cut.image.width * cut.image.height - 1) * 4 + 3]).toBe(0);
  });
});

describe("LocalGenerator", () => {
  it("is the local generator", () => {
    expect(LocalGenerator().name).toBe("local");
  });

  it("answers exactly the requested size, opaque, for several aspect ratios", async () => {
    const product = new Uint8Array(await productJpeg(300, 400));
    for (const [width, height] of [
      [384, 384],
      [512, 288],
      [288, 512],
      [512, 219],
      [320, 400],
    ] as const) {
      const img = await scene(product, { width, height, templateId: "life-kitchen" });
      expect([img.width, img.height]).toEqual([width, height]);
      expect(img.data.length).toBe(width * height * 4);
      expect(img.data.every((v, i) => i % 4 !== 3 || v === 255)).toBe(true);
    }
  });

  it("puts the product in the middle, and on the right for copy space", async () => {
    const product = new Uint8Array(await productJpeg(300, 400));
    const centred = findColour(await scene(product, { width: 512, height: 512, templateId: "studio-white-sweep" }), TEAL);
    expect(centred).not.toBeNull();
    expect(Math.abs(centred!.cx - 256)).toBeLessThan(20);
    expect(centred!.height).toBeGreaterThan(512 * 0.4);
    const banner = findColour(await scene(product, { width: 768, height: 432, templateId: "ecom-copy-space" }), TEAL);
    expect(banner!.cx).toBeGreaterThan(768 * 0.6);
  });

  it("draws each template's palette: the dark spotlight is dark, the marketplace white is white", async () => {
    const product = new Uint8Array(await productJpeg(300, 400));
    const dark = meanOf(await scene(product, { width: 384, height: 384, templateId: "studio-dark-spot" }), [0, 0.2]);
    expect((dark[0] + dark[1] + dark[2]) / 3).toBeLessThan(70);
    const white = await scene(product, { width: 384, height: 384, templateId: "ecom-pure-white" });
    let whitePixels = 0;
    for (let i = 0; i < white.data.length; i += 4) if (white.data[i]! >= 248 && white.data[i + 1]! >= 248 && white.data[i + 2]! >= 248) whitePixels++;
    expect(whitePixels / (384 * 384)).toBeGreaterThan(0.6);
  });

  it("moves the backdrop's colour toward a reference image's", async () => {
    const product = new Uint8Array(await productJpeg(300, 400));
    const red: Rgb = [190, 40, 50];
    const ref = encodePng({ width: 64, height: 64, data: new Uint8Array(64 * 64 * 4).map((_, i) => (i % 4 === 3 ? 255 : red[i % 4]!)) });
    const reference = { bytes: ref, mimeType: "image/png" as const, width: 64, height: 64, url: "" };
    const plain = meanOf(await scene(product, { width: 384, height: 384, templateId: "studio-grey-gradient" }), [0, 0.15]);
    const styled = meanOf(await scene(product, { width: 384, height: 384, templateId: "studio-grey-gradient", reference }), [0, 0.15]);
    const dist = (c: Rgb) => Math.hypot(c[0] - red[0], c[1] - red[1], c[2] - red[2]);
    expect(dist(styled)).toBeLessThan(dist(plain) * 0.5);
  });
});

describe("LocalGenerator, every style", () => {
  it("renders every template, a free-text prompt and a plain studio, opaque at the exact size", async () => {
    const product = new Uint8Array(await productJpeg(150, 200));
    for (const templateId of [...Object.keys(TEMPLATE_STYLES), undefined]) {
      const img = await scene(product, { width: 160, height: 120, templateId, prompt: templateId ? "" : "a cosy christmas morning on a wooden table" });
      expect([img.width, img.height]).toEqual([160, 120]);
      expect(img.data.every((v, i) => i % 4 !== 3 || v === 255)).toBe(true);
    }
  });

  it("stops when the caller has given up", async () => {
    const product = new Uint8Array(await productJpeg(150, 200));
    await expect(scene(product, { width: 160, height: 120, signal: AbortSignal.abort() })).rejects.toThrow();
  });

  it("encodes a scene as a PNG that decodes to the same pixels", async () => {
    const product = new Uint8Array(await productJpeg(150, 200));
    const img = await scene(product, { width: 200, height: 150, templateId: "life-kitchen" });
    const png = await encodeScenePng(img);
    const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    expect([info.width, info.height, info.channels]).toEqual([200, 150, 3]);
    for (let p = 0; p < 200 * 150; p++) for (let k = 0; k < 3; k++) if (data[p * 3 + k] !== img.data[p * 4 + k]) throw new Error(`pixel ${p} differs`);
  });

  it("encodes a scene of many bands (the Worker's deflater, one reused band buffer) to the same pixels", async () => {
    // 1100x1000: 3.3 MB of scanlines, four bands of about 1 MiB; noise, so a band written over too soon shows.
    const img: RgbaImage = { width: 1100, height: 1000, data: new Uint8Array(1100 * 1000 * 4) };
    let x = 12345;
    for (let i = 0; i < img.data.length; i++) img.data[i] = i % 4 === 3 ? 255 : (x = (x * 1103515245 + 12345) >>> 0) >>> 24;
    const png = await encodeScenePng(img); // this suite configures no deflater: CompressionStream, as in a Worker
    const { data } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
    for (let p = 0; p < 1100 * 1000; p++) for (let k = 0; k < 3; k++) if (data[p * 3 + k] !== img.data[p * 4 + k]) throw new Error(`pixel ${p} differs`);
  });
});

describe("styles", () => {
  it("has a style for every template of the catalogue", () => {
    expect(Object.keys(TEMPLATE_STYLES).sort()).toEqual(TEMPLATES.map((t) => t.id).sort());
  });

  it("reads free-text prompts deterministically: scene, material, mood and colour words", () => {
    const pinkMarble = sceneStyleFor(undefined, "A pink marble bathroom shelf");
    expect(pinkMarble.surface).toBe("marble");
    expect(pinkMarble.wall[0][0]).toBeGreaterThan(pinkMarble.wall[0][1] + 20);
    expect(sceneStyleFor(undefined, "A pink marble bathroom shelf")).toEqual(pinkMarble);
    expect(sceneStyleFor(undefined, "christmas morning").lights).toBe("fairy");
    expect(sceneStyleFor(undefined, "dark moody luxury").backdrop).toBe("spot");
    expect(sceneStyleFor(undefined, "on the beach").surface).toBe("sand");
  });

  it("takes a reference's dominant colour for the wall", () => {
    const blue = { width: 8, height: 8, data: new Uint8Array(256).map((_, i) => [30, 60, 200, 255][i % 4]!) };
    const style = styleFromReference(blue, sceneStyleFor("studio-white-sweep", ""));
    expect(style.wall[1][2]).toBeGreaterThan(style.wall[1][0] + 100);
  });
});
