import jsQR from "jsqr";
import sharp from "sharp";
import { inflate } from "pako";
import { beforeAll, describe, expect, it } from "vitest";
import { ApiError } from "../../src/http/errors";
import { decodeImage } from "../../src/images";
import { parseHexColor } from "../../src/qr/colors";
import { decodeQrImage } from "../../src/qr/decode";
import { buildPayload } from "../../src/qr/payloads";
import { crc32 } from "../../src/lib/encoding";
import { renderQr, type QrDesign } from "../../src/qr/render";
import { parseGenerateRequest } from "../../src/qr/schemas";
import { useNodeZxing } from "./zxing-node";

beforeAll(() => useNodeZxing());

const BLACK = parseHexColor("#000");
const WHITE = parseHexColor("#fff");
const design = (over: Partial<QrDesign> = {}): QrDesign => ({ size: 512, fg: BLACK, bg: WHITE, transparent: false, logoSizeRatio: 0.2, ...over });

interface Pixels {
  width: number;
  height: number;
  data: Buffer;
  at(x: number, y: number): [number, number, number, number];
}

async function pixels(png: Uint8Array): Promise<Pixels> {
  const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return {
    width: info.width,
    height: info.height,
    data,
    at: (x, y) => {
      const i = (y * info.width + x) * 4;
      return [data[i]!, data[i + 1]!, data[i + 2]!, data[i + 3]!];
    },
  };
}

/** Chunks of a PNG, checking every CRC with our own implementation's independent use (and sharp's libpng). */
function chunks(png: Uint8Array): Array<{ type: string; data: Uint8Array }> {
  expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const out: Array<{ type: string; data: Uint8Array }> = [];
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  let offset = 8;
  while (offset < png.length) {
    const length = view.getUint32(offset);
    const type = String.fromCharCode(...png.subarray(offset + 4, offset + 8));
    expect(view.getUint32(offset + 8 + length)).toBe(crc32(png, offset + 4, offset + 8 + length));
    out.push({ type, data: png.subarray(offset + 8, offset + 8 + length) });
    offset += 12 + length;
  }
  return out;
}

function distinctColours(p: Pixels): Set<string> {
  const set = new Set<string>();
  for (let i = 0; i < p.data.length; i += 4) set.add(`${p.data[i]},${p.data[i + 1]},${p.data[i + 2]},${p.data[i + 3]}`);
  return set;
}

async function decodesTo(png: Uint8Array, expected: string): Promise<void> {
  const p = await pixels(png);
  const ours = await decodeQrImage({ width: p.width, height: p.height, data: new Uint8Array(p.data) });
  expect(ours?.text).toBe(expected);
  const js = jsQR(new Uint8ClampedArray(p.data), p.width, p.height, { inversionAttempts: "dontInvert" });
  expect(js && new TextDecoder().decode(Uint8Array.from(js.binaryData))).toBe(expected);
}

/** A test logo: a red disc on transparency, or an opaque two-colour square. */
function logo(kind: "disc" | "square", side = 200): { width: number; height: number; data: Uint8Array } {
  const data = new Uint8Array(side * side * 4);
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const i = (y * side + x) * 4;
      const inside = kind === "square" || Math.hypot(x - side / 2 + 0.5, y - side / 2 + 0.5) < side / 2 - 1;
      const stripe = kind === "square" && y > side / 2;
      data.set(inside ? (stripe ? [20, 90, 200, 255] : [220, 30, 40, 255]) : [0, 0, 0, 0], i);
    }
  }
  return { width: side, height: side, data };
}

describe("rendering: every type decodes back to its payload", () => {
  const requests = [
    { type: "url", value: "https://example.com/products/42?ref=qr&utm_source=flyer" },
    { type: "text", value: "Grüße, 日本語, emoji 🎉\nsecond line" },
    { type: "text", value: "0123456789012345" },
    { type: "text", value: "HELLO WORLD $%*+-./:" },
    { type: "wifi", ssid: 'My "Home";Net', password: "p\\a:s,s;w", encryption: "WPA", hidden: true },
    { type: "email", to: "bill+ietf@example.org", subject: "Grüße & hi", body: "Line 1\nLine 2" },
    {
      type: "vcard",
      firstName: "Zoë",
      lastName: "O,Neil",
      organization: "Example; Corp",
      phoneWork: "+44 20 7946 0000",
      email: "zoe@example.com",
      website: "https://example.com/zoe",
    },
    { type: "upi", upiId: "shop@okbank", payeeName: "Ravi & Sons", amount: 1299.5, note: "Order #42" },
  ];
  it.each(requests)("$type %#", async (request) => {
    const payload = buildPayload(parseGenerateRequest(request));
    const { png, warnings } = await renderQr(payload, design());
    expect(warnings).toEqual([]);
    await decodesTo(png, payload);
  });
});

describe("rendering: PNG format", () => {
  it("is a 1-bit palette PNG with valid chunks that sharp and photon both open", async () => {
    const { png } = await renderQr("https://example.com", design());
    const list = chunks(png);
    expect(list.map((c) => c.type)).toEqual(["IHDR", "PLTE", "IDAT", "IEND"]);
    const ihdr = list[0]!.data;
    expect([ihdr[8], ihdr[9]]).toEqual([1, 3]); // bit depth 1, colour type 3
    expect(inflate(list[2]!.data).length).toBe(512 * (Math.ceil(512 / 8) + 1));
    const meta = await sharp(png).metadata();
    expect(meta).toMatchObject({ format: "png", width: 512, height: 512 });
    const viaPhoton = decodeImage(png);
    expect([viaPhoton.width, viaPhoton.height]).toEqual([512, 512]);
    expect(png.length).toBeLessThan(1200);
  });
});

describe("rendering: design options on the pixels", () => {
  it.each([64, 100, 257, 512, 1000, 4096])("size %i is exact, with uniform modules and a quiet zone of at least 4 modules", async (size) => {
    const r = await renderQr("https://example.com/x", design({ size }));
    const p = await pixels(r.png);
    expect([p.width, p.height]).toEqual([size, size]);
    expect(distinctColours(p)).toEqual(new Set(["0,0,0,255", "255,255,255,255"]));
    // The first dark pixel (top-left finder) sits after the quiet zone; the finder is exactly 7 modules.
    let first = -1;
    for (let x = 0; x < size && first < 0; x++) if (p.at(x, Math.floor(size / 2))[0] === 0 || p.at(x, x)[0] === 0) first = x;
    const diagonal: number[] = [];
    for (let i = 0; i < size; i++) diagonal.push(p.at(i, i)[0]);
    const start = diagonal.indexOf(0);
    expect(start).toBeGreaterThanOrEqual(4 * r.scale);
    // Finder on the diagonal: 1 dark, 1 light, 3 dark, 1 light, 1 dark modules.
    const runs: number[] = [];
    let last = diagonal[start];
    let run = 0;
    for (let i = start; i < size && runs.length < 5; i++) {
      if (diagonal[i] === last) run++;
      else {
        runs.push(run);
        run = 1;
        last = diagonal[i];
      }
    }
    expect(runs).toEqual([1, 1, 3, 1, 1].map((m) => m * r.scale));
    expect(first).toBeGreaterThan(0);
  });

  it("uses the exact fg and bg colours, #RGB expanded", async () => {
    const fg = parseHexColor("#1A73E8");
    const bg = parseHexColor("#FFF8E1");
    const r = await renderQr("colours", design({ fg, bg }));
    expect(distinctColours(await pixels(r.png))).toEqual(new Set(["26,115,232,255", "255,248,225,255"]));
    const short = await renderQr("colours", design({ fg: parseHexColor("#123"), bg: parseHexColor("#fEd") }));
    expect(distinctColours(await pixels(short.png))).toEqual(new Set(["17,34,51,255", "255,238,221,255"]));
    await decodesTo(r.png, "colours");
  });

  it("isTransparent gives the background alpha 0 while keeping bg's RGB (a tRNS entry)", async () => {
    const bg = parseHexColor("#FFF8E1");
    const r = await renderQr("transparent", design({ bg, transparent: true, fg: parseHexColor("#202020") }));
    const list = chunks(r.png);
    expect(list.map((c) => c.type)).toEqual(["IHDR", "PLTE", "tRNS", "IDAT", "IEND"]);
    expect([...list[2]!.data]).toEqual([0]);
    const p = await pixels(r.png);
    expect(p.at(0, 0)).toEqual([255, 248, 225, 0]);
    expect(distinctColours(p)).toEqual(new Set(["255,248,225,0", "32,32,32,255"]));
    await decodesTo(r.png, "transparent");
  });
});

describe("rendering: logos", () => {
  it("puts the logo in the centre, clears the modules behind it, and still decodes", async () => {
    const payload = "https://example.com/with-logo";
    const r = await renderQr(payload, design({ logo: logo("square"), logoSizeRatio: 0.25 }));
    expect(r.ecLevel).toBe("H");
    expect(r.logoRatio).toBe(0.25);
    const p = await pixels(r.png);
    expect(p.at(256, 240)).toEqual([220, 30, 40, 255]);
    expect(p.at(256, 272)).toEqual([20, 90, 200, 255]);
    // The logo is ratio x the symbol wide: scan the centre row for the red run.
    let red = 0;
    for (let x = 0; x < 512; x++) if (p.at(x, 240)[0] === 220) red++;
    expect(Math.abs(red - 0.25 * r.modules * r.scale)).toBeLessThanOrEqual(2);
    await decodesTo(r.png, payload);
  });

  it("keeps modules in a round logo's transparent corners and honours isTransparent around it", async () => {
    const payload = "https://example.com/disc";
    const bg = parseHexColor("#FFFFFF");
    const r = await renderQr(payload, design({ logo: logo("disc"), logoSizeRatio: 0.3, transparent: true, bg }));
    const p = await pixels(r.png);
    expect(p.at(256, 256)).toEqual([220, 30, 40, 255]);
    expect(p.at(0, 0)[3]).toBe(0);
    await decodesTo(r.png, payload);
  });

  it("makes a 0.4 logo scan (higher version) or shrinks it with a warning naming the ratio applied", async () => {
    for (const kind of ["disc", "square"] as const) {
      const payload = "https://example.com/products/item-12345?ref=qr";
      const r = await renderQr(payload, design({ logo: logo(kind), logoSizeRatio: 0.4 }));
      await decodesTo(r.png, payload);
      expect(r.logoRatio).toBeGreaterThanOrEqual(0.3);
      if (r.logoRatio! < 0.4) {
        expect(r.warnings).toHaveLength(1);
        expect(r.warnings[0]).toContain(`reduced to ${r.logoRatio!.toFixed(2)}`);
      } else {
        expect(r.warnings).toEqual([]);
      }
    }
  });

  it("scans with a logo for every type's typical payload", async () => {
    for (const payload of [
      "upi://pay?pa=merchant@okbank&pn=My%20Shop&am=1299.00&tn=Order%2012345&cu=INR",
      "BEGIN:VCARD\r\nVERSION:3.0\r\nN:Doe;Jane;;;\r\nFN:Jane Doe\r\nORG:Example Corp\r\nTEL;TYPE=WORK:+1 555 0100\r\nEND:VCARD\r\n",
    ]) {
      const r = await renderQr(payload, design({ logo: logo("square"), logoSizeRatio: 0.3 }));
      await decodesTo(r.png, payload);
    }
  });
});

describe("rendering: refusals", () => {
  async function refusal(payload: string, over: Partial<QrDesign>): Promise<ApiError> {
    try {
      await renderQr(payload, design(over));
    } catch (err) {
      expect(err).toBeInstanceOf(ApiError);
      return err as ApiError;
    }
    throw new Error("rendered");
  }

  it("refuses light-on-dark colours, saying to swap them", async () => {
    const e = await refusal("x", { fg: WHITE, bg: BLACK });
    expect([e.status, e.code]).toEqual([422, "QR_NOT_SCANNABLE"]);
    expect(e.message).toMatch(/lighter than bgColor.*swap/);
  });

  it("refuses contrast below 3:1 and warns below 4:1", async () => {
    const e = await refusal("x", { fg: parseHexColor("#a0a0a0") });
    expect(e.code).toBe("QR_NOT_SCANNABLE");
    expect(e.message).toMatch(/2\.\d\d:1.*at least 3:1/);
    const ok = await renderQr("x", design({ fg: parseHexColor("#808080") }));
    expect(ok.warnings[0]).toMatch(/3\.9\d:1/);
  });

  it("refuses content that does not fit, and a size too small for the content", async () => {
    const long = await refusal("x".repeat(2400), {});
    expect([long.code, long.details?.[0]?.path]).toEqual(["VALIDATION_FAILED", "payload"]);
    const small = await refusal("y".repeat(200), { size: 64 });
    expect([small.code, small.details?.[0]?.path]).toEqual(["VALIDATION_FAILED", "size"]);
    expect((await refusal("x", { size: 5000 })).details?.[0]?.path).toBe("size");
  });
});
