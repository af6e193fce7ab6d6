/**
 * Serves objects of the storage port at /files/<key> (embedded storage; on the edge the bucket serves them).
 * Keys are random UUID paths, so a URL is a capability; platforms fetch post images from here. Security
 * headers (nosniff among them) come from the app's secureHeaders middleware (app.ts).
 */
import { Hono } from "hono";
import type { AppEnv } from "./env";
import { ApiError } from "./errors";

export function createFilesRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  router.get("/*", async (c) => {
    const key = decodedKey(c.req.path.replace(/^.*?\/files\//, ""));
    if (!key || key.includes("..")) throw new ApiError("NOT_FOUND", "No such file.");
    const object = await c.get("services").storage.get(key);
    if (!object) throw new ApiError("NOT_FOUND", "No such file.");
    return c.body(object.bytes as Uint8Array<ArrayBuffer>, 200, {
      "Content-Type": object.contentType,
      "Cache-Control": "public, max-age=31536000, immutable",
    });
  });
  return router;
}

/** The storage key a path names; null when its percent-escapes are not valid UTF-8 (no key is stored so). */
function decodedKey(path: string): string | null {
  try {
    return decodeURIComponent(path);
  } catch {
    return null;
  }
}
