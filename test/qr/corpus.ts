/**
 * The decode-robustness corpus, made in code (nothing binary is committed): clean codes from our generator
 * and from npm `qrcode` (which also gives Shift_JIS byte and Kanji segments), put through what cameras and
 * chat apps do to them: rotation, perspective, blur, sensor noise, inversion, uneven light, low contrast,
 * JPEG artefacts, and scaling up to 4000 px photos. Seeded, so every run builds the same images.
 *
 * @example
 * const corpus = await buildCorpus();
 * for (const item of corpus) await decodeQrImage(item.image);
 */
import QRCode from "qrcode";
import sharp, { type Sharp } from "sharp";
import { parseHexColor } from "../../src/qr/colors";
import { renderQr } from "../../src/qr/render";
import { isZxingConfigured } from "../../src/qr/zxing-loader";
import { useNodeZxing } from "./zxing-node";

export interface CorpusItem {
  name: string;
  expected: string;
  image: { width: number; height: number; data: Uint8Array };
}

type Raw = { width: number; height: number; data: Buffer };

const SJIS_TEXT = "日本語のテキスト、カタカナとひらがな";
const KANJI_TEXT = "漢字モード";

/** Shift_JIS encoding built from the platform's decoder (Node has full ICU): char -> bytes. */
export function shiftJis(text: string): Buffer {
  const decoder = new TextDecoder("shift_jis");
  const table = new Map<string, number[]>();
  for (let lead = 0x81; lead <= 0xfc; lead++) {
    if (lead > 0x9f && lead < 0xe0) continue;
    for (let trail = 0x40; trail <= 0xfc; trail++) {
      if (trail === 0x7f) continue;
      const ch = decoder.decode(new Uint8Array([lead, trail]));
      if (ch.length === 1 && ch !== "\ufffd" && !table.has(ch)) table.set(ch, [lead, trail]);
    }
  }
  const out: number[] = [];
  for (const ch of text) {
    if (ch.charCodeAt(0) < 0x80) out.push(ch.charCodeAt(0));
    else {
      const bytes = table.get(ch);
      if (!bytes) throw new Error(`no Shift_JIS for ${ch}`);
      out.push(...bytes);
    }
  }
  return Buffer.from(out);
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

async function toRaw(input: Sharp): Promise<Raw> {
  const { data, info } = await input.ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data };
}

function fromRaw(raw: Raw): Sharp {
  return sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: 4 } });
}

async function pngOf(raw: Raw): Promise<Buffer> {
  return fromRaw(raw).png().toBuffer();
}

/** Gaussian sensor noise with standard deviation `sigma` on every channel. */
function noise(raw: Raw, sigma: number, seed: number): Raw {
  const rand = rng(seed);
  const data = Buffer.from(raw.data);
  for (let i = 0; i < data.length; i += 4) {
    const g = Math.sqrt(-2 * Math.log(rand() + 1e-12)) * Math.cos(2 * Math.PI * rand()) * sigma;
    for (let c = 0; c < 3; c++) data[i + c] = Math.max(0, Math.min(255, data[i + c]! + g + (rand() - 0.5) * sigma * 0.3));
  }
  return { ...raw, data };
}

/** Light falling off across the image, and contrast squeezed into [lo, hi]. */
function lighting(raw: Raw, lo: number, hi: number): Raw {
  const data = Buffer.from(raw.data);
  for (let y = 0; y < raw.height; y++) {
    for (let x = 0; x < raw.width; x++) {
      const shade = 0.45 + 0.55 * (x / raw.width) * (0.6 + 0.4 * (y / raw.height));
      const i = (y * raw.width + x) * 4;
      for (let c = 0; c < 3; c++) data[i + c] = Math.round((lo + (data[i + c]! / 255) * (hi - lo)) * shade);
    }
  }
  return { ...raw, data };
}

/** Perspective warp: the image's corners go to `corners` (tl, tr, br, bl) in an output of the same size. */
function perspective(raw: Raw, corners: Array<[number, number]>): Raw {
  const { width: w, height: h } = raw;
  const src: Array<[number, number]> = [
    [0, 0],
    [w, 0],
    [w, h],
    [0, h],
  ];
  // Homography from output (dst) to input (src): solve the 8 unknowns.
  const a: number[][] = [];
  const b: number[] = [];
  for (let i = 0; i < 4; i++) {
    const [x, y] = corners[i]!;
    const [u, v] = src[i]!;
    a.push([x, y, 1, 0, 0, 0, -u * x, -u * y]);
    b.push(u);
    a.push([0, 0, 0, x, y, 1, -v * x, -v * y]);
    b.push(v);
  }
  const m = solve(a, b);
  const data = Buffer.alloc(w * h * 4, 255);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const d = m[6]! * x + m[7]! * y + 1;
      const u = (m[0]! * x + m[1]! * y + m[2]!) / d - 0.5;
      const v = (m[3]! * x + m[4]! * y + m[5]!) / d - 0.5;
      if (u < 0 || v < 0 || u >= w - 1 || v >= h - 1) continue;
      const x0 = Math.floor(u);
      const y0 = Math.floor(v);
      const fx = u - x0;
      const fy = v - y0;
      for (let c = 0; c < 4; c++) {
        const p = (yy: number, xx: number) => raw.data[(yy * w + xx) * 4 + c]!;
        data[(y * w + x) * 4 + c] = Math.round(
          p(y0, x0) * (1 - fx) * (1 - fy) + p(y0, x0 + 1) * fx * (1 - fy) + p(y0 + 1, x0) * (1 - fx) * fy + p(y0 + 1, x0 + 1) * fx * fy,
        );
      }
    }
  }
  return { ...raw, data };
}

function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r]![col]!) > Math.abs(m[pivot]![col]!)) pivot = r;
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = m[r]![col]! / m[col]![col]!;
      for (let k = col; k <= n; k++) m[r]![k]! -= f * m[col]![k]!;
    }
  }
  return m.map((row, i) => row[n]! / row[i]!);
}

/** Places `code` (scaled to `side`) on a photo-like background of width x height at (left, top). */
async function onPhoto(code: Buffer, side: number, width: number, height: number, left: number, top: number, seed: number): Promise<Raw> {
  const rand = rng(seed);
  const bg = Buffer.alloc(width * height * 3);
  const gx = 120 + rand() * 80;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      bg[i] = Math.round(gx + (x / width) * 60);
      bg[i + 1] = Math.round(100 + (y / height) * 80);
      bg[i + 2] = Math.round(140 + ((x + y) / (width + height)) * 50);
    }
  }
  const resized = await sharp(code).resize(side, side, { kernel: "nearest" }).png().toBuffer();
  return toRaw(
    sharp(bg, { raw: { width, height, channels: 3 } })
      .composite([{ input: resized, left, top }])
      .blur(0.8),
  );
}

/** The corpus: about 80 images, each with the text it must decode to. */
export async function buildCorpus(): Promise<CorpusItem[]> {
  if (!isZxingConfigured()) useNodeZxing(); // our generator's scan check needs it
  const fg = parseHexColor("#000000");
  const bg = parseHexColor("#FFFFFF");
  const payloads: Array<[string, string]> = [
    ["url", "https://example.com/products/item-12345?ref=qr&campaign=spring"],
    ["text", "Grüße aus Köln – ünïcödé text, emoji 🎉 and a longer sentence to fill the symbol."],
    ["wifi", "WIFI:T:WPA;S:Cafe\\;Guest;P:p\\:ss\\,word;;"],
    ["upi", "upi://pay?pa=merchant@okbank&pn=My%20Shop&am=1299.00&tn=Order%2012345&cu=INR"],
    [
      "vcard",
      "BEGIN:VCARD\r\nVERSION:3.0\r\nN:Doe;Jane;;;\r\nFN:Jane Doe\r\nORG:Example Corp\r\nTEL;TYPE=WORK:+1 555 0100\r\nEMAIL;TYPE=INTERNET:jane@example.com\r\nURL:https://example.com/jane\r\nEND:VCARD\r\n",
    ],
  ];
  const bases: Array<{ name: string; expected: string; png: Buffer }> = [];
  for (const [name, text] of payloads) {
    const { png } = await renderQr(text, { size: 400, fg, bg, transparent: false, logoSizeRatio: 0.2 });
    bases.push({ name, expected: text, png: Buffer.from(png) });
  }
  bases.push({
    name: "sjis-bytes",
    expected: SJIS_TEXT,
    png: await QRCode.toBuffer([{ data: shiftJis(SJIS_TEXT), mode: "byte" }], { width: 400, margin: 4, errorCorrectionLevel: "M" }),
  });
  bases.push({
    name: "sjis-kanji",
    expected: KANJI_TEXT,
    png: await QRCode.toBuffer([{ data: KANJI_TEXT, mode: "kanji" }], {
      width: 400,
      margin: 4,
      toSJISFunc: (ch: string) => shiftJis(ch).readUInt16BE(0),
    } as QRCode.QRCodeToBufferOptions),
  });

  const items: CorpusItem[] = [];
  const add = (name: string, expected: string, raw: Raw) =>
    items.push({ name, expected, image: { width: raw.width, height: raw.height, data: new Uint8Array(raw.data) } });

  let seed = 1;
  for (const base of bases) {
    const b = base.name;
    const raw = await toRaw(sharp(base.png));
    const white = { r: 255, g: 255, b: 255, alpha: 1 };
    add(`${b}/clean`, base.expected, raw);
    add(`${b}/rotate-23`, base.expected, await toRaw(sharp(base.png).rotate(23, { background: white })));
    add(`${b}/rotate-45-blur`, base.expected, await toRaw(sharp(base.png).rotate(45, { background: white }).blur(2.2)));
    add(
      `${b}/perspective`,
      base.expected,
      perspective(raw, [
        [60, 20],
        [370, 70],
        [330, 390],
        [20, 300],
      ]),
    );
    add(`${b}/blur-3.2`, base.expected, await toRaw(sharp(base.png).blur(3.2)));
    add(`${b}/noise-70`, base.expected, noise(raw, 70, seed++));
    add(`${b}/inverted-noise`, base.expected, noise(await toRaw(sharp(base.png).negate({ alpha: false })), 45, seed++));
    add(`${b}/shade-lowcontrast`, base.expected, noise(lighting(raw, 70, 190), 18, seed++));
    add(
      `${b}/jpeg-q6`,
      base.expected,
      await toRaw(
        sharp(await pngOf(noise(raw, 25, seed++)))
          .rotate(12, { background: white })
          .jpeg({ quality: 6 }),
      ),
    );
    add(
      `${b}/combo`,
      base.expected,
      await toRaw(
        sharp(
          await pngOf(
            noise(
              perspective(raw, [
                [30, 40],
                [380, 10],
                [390, 380],
                [10, 350],
              ]),
              45,
              seed++,
            ),
          ),
        )
          .blur(1.6)
          .jpeg({ quality: 20 }),
      ),
    );
    add(`${b}/small-in-photo`, base.expected, await onPhoto(base.png, 260, 1600, 1200, 700, 420, seed++));
  }
  // Scaling to 4000 px: a whole-frame close-up and a code in a 12 MP photo.
  const url = bases[0]!;
  add("url/upscaled-4000", url.expected, await toRaw(sharp(url.png).resize(4000, 4000, { kernel: "cubic" }).blur(6)));
  add("url/photo-4000x3000", url.expected, await onPhoto(url.png, 700, 4000, 3000, 1900, 1200, seed++));
  const vcard = bases[4]!;
  add("vcard/photo-4000x3000-noise", vcard.expected, noise(await onPhoto(vcard.png, 900, 4000, 3000, 600, 900, seed++), 12, seed++));
  return items;
}
