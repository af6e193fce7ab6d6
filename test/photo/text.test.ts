/**
 * Area B's text engine (src/photo/text): shaping checked against HarfBuzz's own JS build (harfbuzzjs, which
 * runs in Node though not in workerd), outlines checked glyph by glyph against HarfBuzz's drawing, and the
 * public drawing functions checked by their pixels.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import * as harfbuzzjs from "harfbuzzjs";
import { beforeAll, describe, expect, it } from "vitest";
import type { RgbaImage } from "../../src/images/types";
import { loadFonts } from "../../src/photo/text/engine";
import { parseGlyf } from "../../src/photo/text/glyf";
import { layoutBlock } from "../../src/photo/text/layout";
import { blockSvg, rasterizePremultiplied } from "../../src/photo/text/svg";
import { configureTextEngine, drawText, rasterizeSvg, renderTextBlock, shapeText, unsupportedCharacters, type FontKey } from "../../src/photo/text";

const resolve = createRequire(import.meta.url).resolve;
const FONT_FILES: Record<FontKey, string> = {
  "sans-400": resolve("@expo-google-fonts/noto-sans/400Regular/NotoSans_400Regular.ttf"),
  "sans-700": resolve("@expo-google-fonts/noto-sans/700Bold/NotoSans_700Bold.ttf"),
  "devanagari-400": resolve("@expo-google-fonts/noto-sans-devanagari/400Regular/NotoSansDevanagari_400Regular.ttf"),
  "devanagari-700": resolve("@expo-google-fonts/noto-sans-devanagari/700Bold/NotoSansDevanagari_700Bold.ttf"),
};

beforeAll(() => {
  configureTextEngine({
    harfbuzzWasm: () => readFile(resolve("harfbuzzjs/dist/harfbuzz.wasm")),
    resvg: () => import("@cf-wasm/resvg"),
    fonts: Object.fromEntries(Object.entries(FONT_FILES).map(([key, path]) => [key, () => readFile(path)])) as Record<FontKey, () => Promise<Buffer>>,
  });
});

/** HarfBuzz's reference shaping of `text` with one font, through harfbuzzjs. */
function reference(fontKey: FontKey, text: string) {
  const font = new harfbuzzjs.Font(new harfbuzzjs.Face(new harfbuzzjs.Blob(readFileSync(FONT_FILES[fontKey])), 0));
  const buffer = new harfbuzzjs.Buffer();
  buffer.addText(text);
  buffer.guessSegmentProperties();
  harfbuzzjs.shape(font, buffer);
  return { font, glyphs: buffer.getGlyphInfosAndPositions() };
}

const flat = (width: number, height: number, [r, g, b]: [number, number, number]): RgbaImage => {
  const data = new Uint8Array(width * height * 4);
  for (let i = 0; i < data.length; i += 4) data.set([r, g, b, 255], i);
  return { width, height, data };
};

/** Deterministic colour noise: a scene as busy as it gets. */
function noise(width: number, height: number, seed = 7): RgbaImage {
  const data = new Uint8Array(width * height * 4);
  let s = seed;
  for (let i = 0; i < data.length; i++) {
    s = (s * 1664525 + 1013904223) >>> 0;
    data[i] = i % 4 === 3 ? 255 : s >>> 24;
  }
  return { width, height, data };
}

/** Columns (x) of an RGBA image that hold any ink (alpha above a threshold). */
function inkColumns(image: RgbaImage, threshold = 32): boolean[] {
  const cols = new Array<boolean>(image.width).fill(false);
  for (let y = 0; y < image.height; y++) for (let x = 0; x < image.width; x++) if (image.data[(y * image.width + x) * 4 + 3]! > threshold) cols[x] = true;
  return cols;
}

/** Runs of ink-free columns between the first and last inked column. */
function gaps(cols: boolean[]): number[] {
  const first = cols.indexOf(true);
  const last = cols.lastIndexOf(true);
  const runs: number[] = [];
  let run = 0;
  for (let x = first; x <= last; x++) {
    if (cols[x]) {
      if (run) runs.push(run);
      run = 0;
    } else run++;
  }
  return runs;
}

/** Bounding box of the pixels that differ between two images of the same size, and how many differ. */
function changed(before: RgbaImage, after: RgbaImage) {
  let [minX, minY, maxX, maxY, count] = [Infinity, Infinity, -1, -1, 0];
  for (let i = 0; i < before.data.length; i += 4) {
    if (
      before.data[i] === after.data[i] &&
      before.data[i + 1] === after.data[i + 1] &&
      before.data[i + 2] === after.data[i + 2] &&
      before.data[i + 3] === after.data[i + 3]
    )
      continue;
    const p = i / 4;
    const [x, y] = [p % before.width, Math.floor(p / before.width)];
    [minX, minY, maxX, maxY] = [Math.min(minX, x), Math.min(minY, y), Math.max(maxX, x), Math.max(maxY, y)];
    count++;
  }
  return { minX, minY, maxX, maxY, count };
}

const copy = (image: RgbaImage): RgbaImage => ({ ...image, data: image.data.slice() });

describe("shaping (HarfBuzz)", () => {
  it("shapes 'विचार कि हिंदी' exactly as HarfBuzz does, the short-i matra before its consonant", async () => {
    const text = "विचार कि हिंदी";
    const ours = await shapeText(text);
    const ref = reference("devanagari-400", text);
    expect(ours.glyphs.map((g) => g.gid)).toEqual(ref.glyphs.map((g) => g.codepoint));
    expect(ours.glyphs.map((g) => Math.round(g.advance * 1000))).toEqual(ref.glyphs.map((g) => g.xAdvance));
    expect(ours.glyphs.every((g) => g.font === "devanagari")).toBe(true);

    // वि (cluster 0) and कि (cluster 6): the matra glyph (named uni093F…) is first in its cluster and left of the consonant.
    for (const cluster of [0, 6, 9]) {
      const inCluster = ours.glyphs.filter((g) => g.cluster === cluster);
      const names = inCluster.map((g) => ref.font.glyphName(g.gid));
      expect(names[0]).toMatch(/^uni093F/);
      expect(inCluster[0]!.x).toBeLessThan(inCluster[1]!.x);
    }
    // Both spaces are real advances (HarfBuzz's space glyph, a quarter em wide).
    const spaces = ours.glyphs.filter((g) => text[g.cluster] === " ");
    expect(spaces).toHaveLength(2);
    for (const space of spaces) expect(space.advance).toBeGreaterThan(0.2);
  });

  it("forms conjuncts: क्ष and श्री have fewer glyphs than code points", async () => {
    expect((await shapeText("क्ष")).glyphs).toHaveLength(1);
    expect((await shapeText("श्री")).glyphs.length).toBeLessThan([..."श्री"].length);
    expect((await shapeText("क्ष", 700)).glyphs).toHaveLength(1);
  });

  it("has a glyph for every character of Latin with ₹ and of Hindi, in both weights (no tofu)", async () => {
    for (const weight of [400, 700] as const) {
      for (const text of ["Diwali Sale ₹499", "विचार कि हिंदी क्ष श्री ज्ञान। सिर्फ ₹499 में!", "Flat 50% off — today only"]) {
        const { glyphs } = await shapeText(text, weight);
        expect(glyphs.length).toBeGreaterThan(0);
        expect(glyphs.filter((g) => g.gid === 0)).toEqual([]);
        expect(await unsupportedCharacters(text, weight)).toEqual([]);
      }
    }
    const mixed = await shapeText("Sale ₹499 दिवाली");
    expect(mixed.glyphs.filter((g) => g.font === "sans").map((g) => g.cluster)).toContain("Sale ₹499 दिवाली".indexOf("₹"));
    expect(await unsupportedCharacters("Sale 🎉")).toEqual(["🎉"]);
  });

  it("draws every glyph of the four fonts with HarfBuzz's own outlines", () => {
    for (const [key, path] of Object.entries(FONT_FILES)) {
      const bytes = readFileSync(path);
      const font = new harfbuzzjs.Font(new harfbuzzjs.Face(new harfbuzzjs.Blob(bytes), 0));
      const ours = parseGlyf(bytes);
      const view = new DataView(bytes.buffer, bytes.byteOffset);
      const maxp = [...Array(view.getUint16(4)).keys()].map((i) => 12 + i * 16).find((r) => bytes.subarray(r, r + 4).toString() === "maxp")!;
      const numGlyphs = view.getUint16(view.getUint32(maxp + 8) + 4);
      const mismatches: number[] = [];
      for (let gid = 0; gid < numGlyphs; gid++) if (font.glyphToPath(gid).replace(/,/g, " ") !== ours.glyph(gid).d) mismatches.push(gid);
      expect({ key, numGlyphs: numGlyphs > 1000, mismatches }).toEqual({ key, numGlyphs: true, mismatches: [] });
    }
  });
});

describe("rasteriser", () => {
  it("covers the same pixels as resvg drawing the same outlines", async () => {
    for (const weight of [400, 700] as const) {
      const fonts = await loadFonts(weight);
      const layout = layoutBlock(fonts, "विचार कि हिंदी क्ष श्री\nDiwali Sale ₹499 (Wg@&)", { maxWidth: 2000, maxHeight: 1000, fontSize: 37.3 }, "center");
      const ours = (
        await renderTextBlock(
          "विचार कि हिंदी क्ष श्री\nDiwali Sale ₹499 (Wg@&)",
          { maxWidth: 2000, maxHeight: 1000, fontSize: 37.3 },
          { color: [0, 0, 0], weight, align: "center" },
        )
      ).image;
      const theirs = await rasterizePremultiplied(blockSvg(layout, { width: layout.width, height: layout.height, x: 0, y: 0, color: [0, 0, 0] }));
      expect([ours.width, ours.height]).toEqual([theirs.width, theirs.height]);
      let [diff, inked, ourInk, theirInk] = [0, 0, 0, 0];
      for (let i = 3; i < ours.data.length; i += 4) {
        diff += Math.abs(ours.data[i]! - theirs.data[i]!);
        ourInk += ours.data[i]!;
        theirInk += theirs.data[i]!;
        if (theirs.data[i]! > 0) inked++;
      }
      expect(inked).toBeGreaterThan(5000);
      // Same total coverage within 1 %, and per pixel within a few levels on average: edges differ because
      // ours is exact-area coverage while resvg quantizes anti-aliasing to a few levels (0, 32, 64, 128…).
      expect(Math.abs(ourInk / theirInk - 1)).toBeLessThan(0.01);
      expect(diff / inked).toBeLessThan(12);
    }
  });
});

describe("renderTextBlock", () => {
  it("renders 'विचार कि हिंदी' with ink-free gaps between the three words only", async () => {
    const { image, lines, fontSize } = await renderTextBlock("विचार कि हिंदी", { maxWidth: 1000, maxHeight: 300, fontSize: 80 }, { color: [0, 0, 0] });
    expect(lines).toEqual(["विचार कि हिंदी"]);
    expect(fontSize).toBe(80);
    const wide = gaps(inkColumns(image)).filter((g) => g >= 0.1 * fontSize);
    expect(wide).toHaveLength(2); // the headline joins each word, so only the spaces leave a gap
  });

  it("renders 'Diwali Sale ₹499' in white with opaque ink in a tight, transparent box", async () => {
    const { image, lines } = await renderTextBlock(
      "Diwali Sale ₹499",
      { maxWidth: 2000, maxHeight: 400, fontSize: 64 },
      { color: [255, 255, 255], weight: 700 },
    );
    expect(lines).toEqual(["Diwali Sale ₹499"]);
    const alphas = [...image.data.filter((_, i) => i % 4 === 3)];
    expect(alphas.filter((a) => a === 255).length).toBeGreaterThan(1000);
    expect(alphas.filter((a) => a === 0).length).toBeGreaterThan(1000);
    const cols = inkColumns(image);
    expect(cols[0]).toBe(false); // one pixel of margin for anti-aliasing, no more
    expect(cols[2]).toBe(true);
    expect(image.height).toBeLessThan(64 * 1.2);
    // Opaque pixels carry the colour (straight alpha).
    const i = image.data.findIndex((v, k) => k % 4 === 3 && v === 255);
    expect([...image.data.subarray(i - 3, i)]).toEqual([255, 255, 255]);
  });

  it("wraps a long sentence in a narrow box, every line within maxWidth", async () => {
    const text = "हर ख़रीद पर मुफ़्त डिलीवरी and free gift wrapping on every order above ₹999 this festive season";
    const box = { maxWidth: 360, maxHeight: 1000, fontSize: 40 };
    const { image, lines, fontSize } = await renderTextBlock(text, box, { color: [0, 0, 0], align: "center" });
    expect(lines.length).toBeGreaterThanOrEqual(4);
    expect(lines.join(" ")).toBe(text);
    expect(fontSize).toBe(40);
    expect(image.width).toBeLessThanOrEqual(box.maxWidth);
    for (const line of lines) expect((await shapeText(line)).width * fontSize).toBeLessThanOrEqual(box.maxWidth);
  });

  it("shrinks a single word wider than the box instead of cutting it", async () => {
    const { image, lines, fontSize } = await renderTextBlock(
      "Supercalifragilistic",
      { maxWidth: 200, maxHeight: 200, fontSize: 80, minFontSize: 30 },
      { color: [0, 0, 0] },
    );
    expect(lines).toEqual(["Supercalifragilistic"]);
    expect(fontSize).toBeLessThan(30); // below minFontSize rather than cut off
    expect(image.width).toBeLessThanOrEqual(200);
    expect(image.width).toBeGreaterThan(150);
  });

  it("keeps a long Hindi word whole (no break inside a grapheme cluster), scaled to the box", async () => {
    const word = "अंतर्राष्ट्रीयकरण"; // one word, conjuncts and matras throughout
    const { image, lines } = await renderTextBlock(word, { maxWidth: 150, maxHeight: 100, fontSize: 60 }, { color: [0, 0, 0] });
    expect(lines).toEqual([word]);
    expect(image.width).toBeLessThanOrEqual(150);
    expect(image.height).toBeLessThanOrEqual(100);
  });

  it("never breaks at a space that carries a combining mark, and refuses a nonsensical font size", async () => {
    const { lines } = await renderTextBlock("नमस्ते ँ दुनिया ँ फिर", { maxWidth: 120, maxHeight: 1000, fontSize: 40, minFontSize: 40 }, { color: [0, 0, 0] });
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line).not.toMatch(/^\p{M}/u);
    await expect(renderTextBlock("x", { maxWidth: 100, maxHeight: 100, fontSize: Number.NaN }, { color: [0, 0, 0] })).rejects.toThrow(RangeError);
  });

  it("shrinks to honour maxLines and maxHeight", async () => {
    const text = "Festive offers on handmade brass lamps and candles";
    const { lines, fontSize, image } = await renderTextBlock(text, { maxWidth: 500, maxHeight: 120, fontSize: 72, maxLines: 2 }, { color: [0, 0, 0] });
    expect(lines.length).toBeLessThanOrEqual(2);
    expect(lines.join(" ")).toBe(text);
    expect(fontSize).toBeLessThan(72);
    expect(image.height).toBeLessThanOrEqual(120);
    expect(image.width).toBeLessThanOrEqual(500);
  });

  it("does not start a line with a dash", async () => {
    const { lines } = await renderTextBlock("Diwali Sale ₹499 — दिवाली धमाका", { maxWidth: 700, maxHeight: 400, fontSize: 80 }, { color: [0, 0, 0] });
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line).not.toMatch(/^—/);
  });
});

describe("drawText", () => {
  it("stays inside the canvas when the rect does not, and inks where it says", async () => {
    const canvas = flat(400, 300, [250, 250, 250]);
    const before = copy(canvas);
    const rect = { x: 250, y: 200, width: 300, height: 200 }; // half outside
    const covered = await drawText(canvas, "Diwali Sale ₹499 दिवाली", rect, {
      fontSize: 48,
      color: [20, 20, 20],
      align: "right",
      anchor: "bottom",
      legibility: "panel",
    });
    expect(covered.x).toBeGreaterThanOrEqual(250);
    expect(covered.y).toBeGreaterThanOrEqual(200);
    expect(covered.x + covered.width).toBeLessThanOrEqual(400);
    expect(covered.y + covered.height).toBeLessThanOrEqual(300);
    const diff = changed(before, canvas);
    expect(diff.count).toBeGreaterThan(200);
    expect(diff.minX).toBeGreaterThanOrEqual(covered.x);
    expect(diff.minY).toBeGreaterThanOrEqual(covered.y);
    expect(diff.maxX).toBeLessThan(covered.x + covered.width);
    expect(diff.maxY).toBeLessThan(covered.y + covered.height);
    // Anchored bottom-right: the covered block hugs the canvas's bottom-right corner (within the panel margin).
    expect(400 - (covered.x + covered.width)).toBeLessThan(20);
    expect(300 - (covered.y + covered.height)).toBeLessThan(20);
  });

  it("anchors top, center and bottom inside the rect", async () => {
    const ys: number[] = [];
    for (const anchor of ["top", "center", "bottom"] as const) {
      const canvas = flat(600, 600, [255, 255, 255]);
      const covered = await drawText(
        canvas,
        "₹499",
        { x: 100, y: 100, width: 400, height: 400 },
        { fontSize: 60, color: [0, 0, 0], align: "center", anchor, legibility: "none" },
      );
      expect(covered.x + covered.width / 2).toBeCloseTo(300, -1);
      ys.push(covered.y + covered.height / 2);
    }
    expect(ys[0]).toBeLessThan(200);
    expect(ys[1]).toBeCloseTo(300, -1);
    expect(ys[2]).toBeGreaterThan(400);
  });

  it("adds a panel behind text on a busy background in auto mode", async () => {
    const canvas = noise(500, 200);
    const withNone = copy(canvas);
    const options = { fontSize: 56, color: [255, 255, 255] as [number, number, number], align: "center" as const, anchor: "center" as const };
    const rect = { x: 0, y: 0, width: 500, height: 200 };
    const auto = await drawText(canvas, "Sale ₹499", rect, { ...options, legibility: "auto" });
    const none = await drawText(withNone, "Sale ₹499", rect, { ...options, legibility: "none" });
    const backgroundChanged = changed(noise(500, 200), canvas).count;
    const inkOnly = changed(noise(500, 200), withNone).count;
    expect(backgroundChanged).toBeGreaterThan(inkOnly * 2); // the pixels around the glyphs changed too
    expect(auto.width * auto.height).toBeGreaterThan(none.width * none.height);
  });

  it("skips the panel on a calm background with good contrast, and backs white text on white", async () => {
    const calm = flat(500, 200, [250, 245, 235]);
    const covered = await drawText(
      calm,
      "Sale ₹499",
      { x: 0, y: 0, width: 500, height: 200 },
      { fontSize: 56, color: [20, 20, 20], align: "center", anchor: "center" },
    );
    const diff = changed(flat(500, 200, [250, 245, 235]), calm);
    // Only glyph pixels changed: the changed box is the ink box, well inside the room kept for a panel.
    expect(diff.minX).toBeGreaterThan(covered.x - 1);
    expect(diff.count).toBeLessThan(covered.width * covered.height * 0.6);

    const white = flat(500, 200, [255, 255, 255]);
    await drawText(white, "Sale ₹499", { x: 0, y: 0, width: 500, height: 200 }, { fontSize: 56, color: [255, 255, 255], align: "center", anchor: "center" });
    // A dark panel or halo now separates the white text from the white scene, at WCAG AA contrast (4.5:1).
    const linear = (v: number) => ((v / 255 + 0.055) / 1.055) ** 2.4;
    const histogram = new Map<number, number>();
    for (let i = 0; i < white.data.length; i += 4) if (white.data[i] !== 255) histogram.set(white.data[i]!, (histogram.get(white.data[i]!) ?? 0) + 1);
    const [backing] = [...histogram.entries()].sort((a, b) => b[1] - a[1])[0]!; // the most common non-white grey
    expect(white.data[[...white.data].findIndex((v, i) => i % 4 === 0 && v === backing) + 1]).toBe(backing); // grey: r = g = b
    expect((1 + 0.05) / (linear(backing) + 0.05)).toBeGreaterThanOrEqual(4.5);
  });

  it("outlines text on a smooth gradient it contrasts with only in part", async () => {
    const gradient = (): RgbaImage => {
      const image = flat(600, 160, [0, 0, 0]);
      for (let i = 0; i < image.data.length; i += 4) image.data.fill(Math.round((((i / 4) % 600) / 599) * 255), i, i + 3);
      return image;
    };
    const draw = async (legibility: "auto" | "outline" | "panel") => {
      const canvas = gradient();
      await drawText(
        canvas,
        "Sale ₹499 दिवाली",
        { x: 0, y: 0, width: 600, height: 160 },
        { fontSize: 64, color: [255, 255, 255], weight: 700, align: "center", anchor: "center", legibility },
      );
      return canvas.data;
    };
    const auto = await draw("auto");
    expect(Buffer.from(auto).equals(Buffer.from(await draw("outline")))).toBe(true);
    expect(Buffer.from(auto).equals(Buffer.from(await draw("panel")))).toBe(false);
  });

  it("draws nothing for blank text and for a rect outside the canvas", async () => {
    const canvas = flat(100, 100, [0, 0, 0]);
    expect((await drawText(canvas, "   ", { x: 0, y: 0, width: 100, height: 100 }, { fontSize: 20, color: [255, 255, 255] })).width).toBe(0);
    expect((await drawText(canvas, "Hi", { x: 200, y: 0, width: 100, height: 100 }, { fontSize: 20, color: [255, 255, 255] })).width).toBe(0);
    expect(changed(flat(100, 100, [0, 0, 0]), canvas).count).toBe(0);
  });
});

describe("rasterizeSvg", () => {
  it("renders an SVG at the requested width with straight alpha", async () => {
    const image = await rasterizeSvg(
      '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 5"><rect x="0" y="0" width="5" height="5" fill="#c86432" fill-opacity="0.5"/></svg>',
      200,
    );
    expect([image.width, image.height]).toEqual([200, 100]);
    const [r, g, b, a] = image.data.subarray((50 * 200 + 50) * 4, (50 * 200 + 50) * 4 + 4);
    expect(a).toBe(128);
    for (const [got, want] of [
      [r, 200],
      [g, 100],
      [b, 50],
    ])
      expect(Math.abs(got! - want!)).toBeLessThanOrEqual(2); // 8-bit premultiplication loses a little
    expect(image.data[(50 * 200 + 150) * 4 + 3]).toBe(0);
  });
});

describe("configuration", () => {
  it("rasterizeSvg needs resvg from the entry point; text does not", async () => {
    configureTextEngine({
      harfbuzzWasm: () => readFile(resolve("harfbuzzjs/dist/harfbuzz.wasm")),
      fonts: Object.fromEntries(Object.entries(FONT_FILES).map(([key, path]) => [key, () => readFile(path)])) as Record<FontKey, () => Promise<Buffer>>,
    });
    await expect(rasterizeSvg('<svg xmlns="http://www.w3.org/2000/svg" width="2" height="2"/>', 2)).rejects.toThrow(/resvg/);
    expect((await renderTextBlock("₹499 दिवाली", { maxWidth: 400, maxHeight: 100, fontSize: 40 }, { color: [0, 0, 0] })).image.width).toBeGreaterThan(50);
  });
});
