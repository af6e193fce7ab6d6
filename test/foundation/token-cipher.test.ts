/**
 * The token cipher (src/adapters/token-cipher.ts) opens a ciphertext once for everyone who asks while it is
 * being opened (a burst of one account's targets claimed together), and keeps no ciphertext that fails to open.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { AesGcmTokenCipher, generateTokenKey } from "../../src/adapters/token-cipher";

afterEach(() => vi.restoreAllMocks());

describe("AesGcmTokenCipher", () => {
  it("a hundred concurrent asks for one token decrypt it once, and all get the token", async () => {
    const cipher = AesGcmTokenCipher(generateTokenKey());
    const stored = await cipher.encrypt("EAAB-page-token");
    const decrypt = vi.spyOn(crypto.subtle, "decrypt");
    const tokens = await Promise.all(Array.from({ length: 100 }, () => cipher.decrypt(stored)));
    expect(new Set(tokens)).toEqual(new Set(["EAAB-page-token"]));
    expect(decrypt).toHaveBeenCalledTimes(1);
    // Asked again later: kept, still no second decrypt.
    expect(await cipher.decrypt(stored)).toBe("EAAB-page-token");
    expect(decrypt).toHaveBeenCalledTimes(1);
  });

  it("a ciphertext that does not open fails every concurrent ask, and is tried afresh the next time", async () => {
    const cipher = AesGcmTokenCipher(generateTokenKey());
    const stored = await cipher.encrypt("EAAB-page-token");
    const tampered = `${stored.slice(0, -2)}${stored.at(-2) === "A" ? "B" : "A"}${stored.at(-1)}`;
    const decrypt = vi.spyOn(crypto.subtle, "decrypt");
    const asks = await Promise.allSettled(Array.from({ length: 10 }, () => cipher.decrypt(tampered)));
    expect(asks.every((a) => a.status === "rejected")).toBe(true);
    expect(decrypt).toHaveBeenCalledTimes(1);
    await expect(cipher.decrypt(tampered)).rejects.toThrow();
    expect(decrypt).toHaveBeenCalledTimes(2);
    // The untouched ciphertext still opens.
    expect(await cipher.decrypt(stored)).toBe("EAAB-page-token");
  });

  it("a malformed ciphertext is refused without a decrypt", async () => {
    const cipher = AesGcmTokenCipher(generateTokenKey());
    const decrypt = vi.spyOn(crypto.subtle, "decrypt");
    await expect(cipher.decrypt("no-iv!.no-data?")).rejects.toThrow(/malformed/);
    expect(decrypt).not.toHaveBeenCalled();
  });
});
