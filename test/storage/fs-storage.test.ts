/**
 * The filesystem twin of the storage port (functions/node/fs-storage.ts): objects under a root directory,
 * content type kept beside them, keys that would escape the root refused.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtemp, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FsStorage } from "../../functions/node/fs-storage";

let dir: string;
let root: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fs-storage-"));
  root = join(dir, "files");
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("FsStorage", () => {
  it("puts, gets and deletes, keeping the content type", async () => {
    const storage = FsStorage(root, "http://127.0.0.1:8787");
    const data = Uint8Array.from({ length: 256 }, (_, i) => i);
    const url = await storage.put("media/u1/abc.png", data, "image/png");
    expect(url).toBe("http://127.0.0.1:8787/files/media/u1/abc.png");
    expect(storage.urlFor("media/u1/abc.png")).toBe(url);

    const got = await storage.get("media/u1/abc.png");
    expect(got?.contentType).toBe("image/png");
    expect(got?.bytes).toEqual(data);

    await storage.put("media/u1/abc.png", Uint8Array.of(1, 2, 3), "image/webp");
    expect(await storage.get("media/u1/abc.png")).toEqual({ bytes: Uint8Array.of(1, 2, 3), contentType: "image/webp" });

    await storage.delete("media/u1/abc.png");
    expect(await storage.get("media/u1/abc.png")).toBeNull();
    await expect(storage.delete("media/u1/abc.png")).resolves.toBeUndefined();
    // No temporary or type files are left behind.
    expect(await readdir(join(root, "media/u1"))).toEqual([]);
  });

  it("answers null for a missing key", async () => {
    expect(await FsStorage(root, "http://x").get("media/none.jpg")).toBeNull();
  });

  it("refuses keys that escape the root", async () => {
    const storage = FsStorage(root, "http://x");
    for (const key of ["../outside.jpg", "media/../../outside.jpg", "/tmp/absolute.jpg", "..", "."]) {
      await expect(storage.put(key, Uint8Array.of(1), "image/jpeg"), key).rejects.toThrow(/escapes the storage root/);
      await expect(storage.delete(key), key).rejects.toThrow(/escapes the storage root/);
      expect(await storage.get(key), key).toBeNull();
    }
    await expect(stat(join(dir, "outside.jpg"))).rejects.toThrow();
    await expect(stat("/tmp/absolute.jpg")).rejects.toThrow();
  });
});
