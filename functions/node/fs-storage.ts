/**
 * Filesystem twin of the storage port: objects under DATA_DIR/files, served by the app at /files/<key>.
 * Writes go to a temporary name first and are renamed, so a crash never leaves a half-written object.
 *
 * @example
 * const storage = FsStorage(".data/files", "http://127.0.0.1:8787");
 */
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, resolve, sep } from "node:path";
import type { Storage } from "../../src/services";

export function FsStorage(root: string, publicBaseUrl: string): Storage {
  const base = resolve(root);
  const pathFor = (key: string) => {
    const full = resolve(base, key);
    if (!full.startsWith(base + sep)) throw new Error("storage key escapes the storage root");
    return full;
  };
  const urlFor = (key: string) => `${publicBaseUrl}/files/${key}`;
  return {
    async put(key, bytes, contentType) {
      const path = pathFor(key);
      await mkdir(dirname(path), { recursive: true });
      const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
      await writeFile(tmp, bytes);
      await writeFile(`${tmp}.type`, contentType);
      await rename(`${tmp}.type`, `${path}.type`);
      await rename(tmp, path);
      return urlFor(key);
    },
    async get(key) {
      try {
        const path = pathFor(key);
        const [bytes, contentType] = await Promise.all([readFile(path), readFile(`${path}.type`, "utf8").catch(() => "application/octet-stream")]);
        return { bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength), contentType };
      } catch {
        return null;
      }
    },
    async delete(key) {
      const path = pathFor(key);
      await rm(path, { force: true });
      await rm(`${path}.type`, { force: true });
    },
    urlFor,
  };
}
