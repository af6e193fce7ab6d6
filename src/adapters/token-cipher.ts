/**
 * AES-256-GCM for platform access tokens at rest (WebCrypto: the same code on Workers and Node).
 * Ciphertext format: base64url(iv) + "." + base64url(ciphertext+tag).
 *
 * @example
 * const cipher = AesGcmTokenCipher(base64Key);
 * const stored = await cipher.encrypt("EAAB...");
 */
import type { TokenCipher } from "../services";
import { base64FromBytes, bytesFromBase64Strict } from "../lib/encoding";
import { keptLookups } from "../lib/kept-lookups";

/** How many opened tokens a cipher keeps (accounts publishing at the same time), and for how long at most. */
const OPENED_SIZE = 1000;
const OPENED_MS = 10 * 60_000;

export function AesGcmTokenCipher(base64Key: string): TokenCipher {
  const raw = bytesFromBase64Strict(base64Key);
  if (raw?.length !== 32) throw new Error("TOKEN_ENCRYPTION_KEY must be 32 bytes, base64 encoded");
  const keyPromise = crypto.subtle.importKey("raw", raw as BufferSource, "AES-GCM", false, ["encrypt", "decrypt"]);
  // The tokens this cipher opened lately, by ciphertext: every delivery decrypts its account's token, and
  // WebCrypto's decrypt is a job on libuv's thread pool and back, 30 µs of the request thread's time each. A
  // ciphertext always opens to the same token (a changed or tampered one is another key here and is
  // decrypted, and checked, afresh), so nothing kept can be stale. What is kept is the opening from its start:
  // a burst of one account's targets claimed together asks for its token a hundred times before the first
  // decrypt is back, and all of them wait for that one. A ciphertext that does not open is not kept. A token
  // is kept ten minutes at most, so the tokens of accounts no longer publishing do not stay in the heap.
  const opened = keptLookups<string>({ ttlMs: OPENED_MS, maxEntries: OPENED_SIZE });
  const b64url = (bytes: Uint8Array) => base64FromBytes(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  const open = async (cipher: string) => {
    const [ivPart, dataPart] = cipher.split(".");
    const iv = bytesFromBase64Strict(ivPart ?? "");
    const data = bytesFromBase64Strict(dataPart ?? "");
    if (!iv || !data) throw new Error("malformed token ciphertext");
    return new TextDecoder().decode(await crypto.subtle.decrypt({ name: "AES-GCM", iv: iv as BufferSource }, await keyPromise, data as BufferSource));
  };
  return {
    async encrypt(plain) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await keyPromise, new TextEncoder().encode(plain)));
      return `${b64url(iv)}.${b64url(sealed)}`;
    },
    decrypt(cipher) {
      return opened(cipher, () => open(cipher));
    },
  };
}

export function generateTokenKey(): string {
  return base64FromBytes(crypto.getRandomValues(new Uint8Array(32)));
}
