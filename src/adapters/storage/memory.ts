/**
 * In-memory storage twin (tests). Objects are served by the app at `/files/<key>` like the filesystem twin.
 *
 * @example
 * const storage = MemoryStorage("http://127.0.0.1:8787");
 */
import type { Storage, StoredObject } from "../../services";

export function MemoryStorage(publicBaseUrl: string): Storage {
  const objects = new Map<string, StoredObject>();
  const urlFor = (key: string) => `${publicBaseUrl}/files/${key}`;
  return {
    async put(key, bytes, contentType) {
      objects.set(key, { bytes, contentType });
      return urlFor(key);
    },
    async get(key) {
      return objects.get(key) ?? null;
    },
    async delete(key) {
      objects.delete(key);
    },
    urlFor,
  };
}
