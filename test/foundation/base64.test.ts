/**
 * The one Base64 codec (src/lib/encoding.ts): what the image input, token keys and QR/photo data URIs rely
 * on, checked against Node's Buffer.
 */
import { randomBytes } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { configureNodeEngines } from "../../functions/node/engines";
import { Base64Stream, base64FromBytes, base64Pieces, bytesFromBase64Strict, decodeBase64, sha256Hex } from "../../src/lib/encoding";

describe("Base64 codec", () => {
  it("encodes exactly as Buffer for every tail length", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(1003));
    for (let n = 0; n <= 12; n++) expect(base64FromBytes(bytes.subarray(0, n))).toBe(Buffer.from(bytes.subarray(0, n)).toString("base64"));
    expect(base64FromBytes(bytes)).toBe(Buffer.from(bytes).toString("base64"));
  });

  it("encodes in pieces exactly as Buffer, for any piece size and tail length", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(10_007));
    for (const n of [0, 1, 2, 3, 4, 5, 6, 7, 3000, 10_007]) {
      for (const piece of [3, 4, 5, 48, 1000, 48 * 1024]) {
        let text = "";
        for (const ascii of base64Pieces(bytes.subarray(0, n), piece)) text += Buffer.from(ascii).toString("latin1"); // each read before the next

        expect(text, `${n} bytes in pieces of ${piece}`).toBe(Buffer.from(bytes.subarray(0, n)).toString("base64"));
      }
    }
  });

  it("decodes standard, URL-safe, unpadded and line-wrapped text to the same bytes", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(1000));
    const std = Buffer.from(bytes).toString("base64");
    for (const text of [std, Buffer.from(bytes).toString("base64url"), std.replace(/=+$/, ""), std.replace(/(.{76})/g, "$1\r\n"), ` ${std}\n`]) {
      expect(Buffer.from(decodeBase64(text)).equals(Buffer.from(bytes))).toBe(true);
    }
  });

  it("names the position of the first bad character, and refuses bad lengths and padding", () => {
    expect(() => decodeBase64("aGVs*G8=")).toThrowError(/unexpected character at position 4/);
    expect(() => decodeBase64("aG=Vs")).toThrowError(/data after padding at position 3/);
    expect(decodeBase64("aGk")).toEqual(new Uint8Array([0x68, 0x69]));
    for (const bad of ["aGVsb", "aGk==", "aGVsbG8==="]) {
      expect(() => decodeBase64(bad)).toThrowError(/length or padding/);
      expect(bytesFromBase64Strict(bad)).toBeNull();
    }
  });

  it("strict decoding gives null instead of an error, and the bytes of a 32-byte key in either alphabet", () => {
    const key = crypto.getRandomValues(new Uint8Array(32));
    expect(bytesFromBase64Strict(Buffer.from(key).toString("base64"))).toEqual(key);
    expect(bytesFromBase64Strict(`${Buffer.from(key).toString("base64url")}\n`)).toEqual(key);
    expect(bytesFromBase64Strict("not base64!")).toBeNull();
  });
});

describe("Base64 codec with Node's decoder for long text (as the server configures it)", () => {
  beforeAll(() => configureNodeEngines());
  const bytes = new Uint8Array(randomBytes(100_001));
  const std = Buffer.from(bytes).toString("base64");

  it("decodes every accepted form of long text to the same bytes, as a plain Uint8Array", () => {
    const mixed = `${std.slice(0, 1000).replace(/\+/g, "-")}${std.slice(1000)}`;
    // The last digit with its unused low bits set (100001 bytes end in three digits and "="): the same bytes.
    const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const looseTail = `${std.slice(0, -2)}${digits[digits.indexOf(std[std.length - 2]!) | 3]}=`;
    for (const text of [std, Buffer.from(bytes).toString("base64url"), std.replace(/=+$/, ""), mixed, std.replace(/(.{76})/g, "$1\n"), looseTail]) {
      const out = decodeBase64(text);
      expect(out.constructor).toBe(Uint8Array);
      expect(Buffer.from(out).equals(Buffer.from(bytes))).toBe(true);
    }
  });

  it("decodes a stream (Base64Stream, as a request body arrives) to the same bytes and the same first error, whatever the chunks", () => {
    const decodeStream = (text: string, chunk: number) => {
      const src = Buffer.from(text, "latin1");
      const d = new Base64Stream(1 << 20);
      for (let at = 0; at < src.length; at += chunk) {
        const piece = src.subarray(at, Math.min(src.length, at + chunk));
        for (let i = d.digits(piece, 0, piece.length); i < piece.length; i = d.digits(piece, i + 1, piece.length)) d.char(piece[i]!);
      }
      d.finish();
      return d;
    };
    const mixed = `${std.slice(0, 50_000).replace(/\//g, "_")}${std.slice(50_000)}`;
    for (const chunk of [65_536, 5_000, 4_099]) {
      for (const text of [std, Buffer.from(bytes).toString("base64url"), mixed, std.replace(/(.{76})/g, "$1\n")]) {
        const d = decodeStream(text, chunk);
        expect(d.error).toBeNull();
        expect(Buffer.from(d.bytes()).equals(Buffer.from(bytes))).toBe(true);
      }
      expect(decodeStream(`${std.slice(0, 70_000)}*${std.slice(70_001)}`, chunk).error).toBe("unexpected character at position 70000");
      expect(decodeStream(`${std.slice(0, 70_000)}=${std.slice(70_001)}`, chunk).error).toBe("unexpected data after padding at position 70001");
      expect(decodeStream(`${std.slice(0, 70_000)}\\n${std.slice(70_000)}`, chunk).error).toBe("unexpected character at position 70000");
    }
  });

  it("keeps the portable errors and positions on long text", () => {
    expect(() => decodeBase64(`${std.slice(0, 70_000)}*${std.slice(70_001)}`)).toThrowError(/unexpected character at position 70000/);
    expect(() => decodeBase64(`${std.slice(0, 70_000)}=${std.slice(70_001)}`)).toThrowError(/data after padding at position 70001/);
    expect(() => decodeBase64(`${std}=`)).toThrowError(/length or padding/);
    expect(() => decodeBase64(`${std.replace(/=+$/, "")}AB`)).toThrowError(/length or padding/);
  });
});

describe("SHA-256 as the server configures it (node:crypto in place of WebCrypto)", () => {
  beforeAll(() => configureNodeEngines());

  it("gives WebCrypto's digest for text (UTF-8) and bytes", async () => {
    const webCrypto = async (data: Uint8Array) => Buffer.from(await crypto.subtle.digest("SHA-256", data as BufferSource)).toString("hex");
    expect(await sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    for (const text of ["", "sk_live_ünïcode ✓ 😀", "x".repeat(100_000)]) expect(await sha256Hex(text)).toBe(await webCrypto(new TextEncoder().encode(text)));
    const bytes = new Uint8Array(randomBytes(4096));
    expect(await sha256Hex(bytes)).toBe(await webCrypto(bytes));
  });
});
