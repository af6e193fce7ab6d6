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

export function AesGcmTokenCipher(base64Key: string): TokenCipher {
  const raw = bytesFromBase64Strict(base64Key);
  if (!raw || raw.length !== 32) throw new Error("TOKEN_ENCRYPTION_KEY must be 32 bytes, base64 encoded");
  const keyPromise = crypto.subtle.importKey("raw", raw as BufferSource, "AES-GCM", false, ["encrypt", "decrypt"]);
  const b64url = (bytes: Uint8Array) => base64FromBytes(bytes).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  return {
    async encrypt(plain) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv }, await keyPromise, new TextEncoder().encode(plain)));
      return `${b64url(iv)}.${b64url(sealed)}`;
    },
    async decrypt(cipher) {
      const [ivPart, dataPart] = cipher.split(".");
      const iv = bytesFromBase64Strict(ivPart ?? "");
      const data = bytesFromBase64Strict(dataPart ?? "");
      if (!iv || !data) throw new Error("malformed token ciphertext");
      const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: iv as BufferSource }, await keyPromise, data as BufferSource);
      return new TextDecoder().decode(plain);
    },
  };
}

export function generateTokenKey(): string {
  return base64FromBytes(crypto.getRandomValues(new Uint8Array(32)));
}
