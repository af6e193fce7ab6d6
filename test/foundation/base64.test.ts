/**
 * The one Base64 codec (src/lib/encoding.ts): what the image input, token keys and QR/photo data URIs rely
 * on, checked against Node's Buffer.
 */
import { describe, expect, it } from "vitest";
import { base64FromBytes, bytesFromBase64Strict, decodeBase64 } from "../../src/lib/encoding";

describe("Base64 codec", () => {
  it("encodes exactly as Buffer for every tail length", () => {
    const bytes = crypto.getRandomValues(new Uint8Array(1003));
    for (let n = 0; n <= 12; n++) expect(base64FromBytes(bytes.subarray(0, n))).toBe(Buffer.from(bytes.subarray(0, n)).toString("base64"));
    expect(base64FromBytes(bytes)).toBe(Buffer.from(bytes).toString("base64"));
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
