/**
 * Media assets of area C: images fetched or decoded through the shared pipeline (src/images), normalised to
 * JPEG and kept through the storage port under a random key. Media are owner-scoped API assets; post images
 * given inline become media too, inserted in the post's transaction.
 *
 * @example
 * const media = await createMedia(services, userId, { url: "https://cdn.example.com/a.jpg" });
 */
import { and, eq, inArray } from "drizzle-orm";
import type { Db } from "../../db/client";
import { media } from "../../db/schema";
import { ApiError, forField } from "../http/errors";
import { loadImageBytes, sniffImage, type NormalisedJpeg } from "../images";
import type { Services } from "../services";
import type { MediaCreate } from "./schemas";
import { isUuid, sha256Hex } from "../lib/encoding";

export type MediaRow = typeof media.$inferSelect;

export interface MediaRecord {
  id: string;
  url: string;
  mimeType: "image/jpeg";
  width: number;
  height: number;
  bytes: number;
  createdAt: string;
}

/** Where an image comes from: a URL to fetch safely, or inline Base64 / a data URI. */
export type ImageSource = { url: string } | { base64: string };

/**
 * A string image is a data URI (`data:`), a URL (anything starting with a scheme, so `ftp://`, `http://` and
 * sloppy forms like `https:host` reach the URL rules and get their precise refusal; Base64 has no colon),
 * or else bare Base64.
 */
export function sourceOfString(value: string): ImageSource {
  const v = value.trim();
  if (/^data:/i.test(v)) return { base64: v };
  if (/^[a-z][a-z0-9+.-]*:/i.test(v)) return { url: v };
  return { base64: v };
}

export function sourceOfMediaBody(body: MediaCreate): ImageSource {
  if (typeof body === "string") return sourceOfString(body);
  return "url" in body ? { url: body.url } : { base64: body.base64 };
}

/**
 * Bytes of an image source, through the safe fetcher for URLs (10 MB cap while streaming), sniffed with the
 * deployment's decode limits, so an image this server will not decode is refused before any decoding.
 */
export async function loadSource(services: Services, source: ImageSource): Promise<Uint8Array> {
  const bytes = await loadImageBytes(services.fetcher, source, services.inlineImages);
  sniffImage(bytes, services.imageLimits);
  return bytes;
}

/** The media row for a normalised image, its bytes already in storage. */
export async function storeNormalised(services: Services, userId: string, image: NormalisedJpeg): Promise<typeof media.$inferInsert> {
  const id = crypto.randomUUID();
  const storageKey = `media/${id}.jpg`;
  // The digest is made while the storage write is under way.
  const [url, sha256] = await Promise.all([services.storage.put(storageKey, image.bytes, image.mimeType), sha256Hex(image.bytes)]);
  return {
    id,
    userId,
    storageKey,
    url,
    mimeType: image.mimeType,
    width: image.width,
    height: image.height,
    bytes: image.bytes.length,
    sha256,
    createdAt: services.clock.now(),
  };
}

/** POST /media: load, normalise, store, record. */
export async function createMedia(services: Services, userId: string, body: MediaCreate): Promise<MediaRecord> {
  const field = typeof body === "string" ? "(body)" : "url" in body ? "url" : "base64";
  const bytes = await forField(field, () => loadSource(services, sourceOfMediaBody(body)));
  // The upload is not needed after normalising: handed over, it moves to the work thread uncopied.
  const normalised = await services.heavy.run(userId, "normaliseMedia", { bytes, limits: services.imageLimits }, [bytes]);
  const values = await storeNormalised(services, userId, normalised);
  try {
    const [row] = await services.db.insert(media).values(values).returning();
    return toMediaRecord(row!);
  } catch (err) {
    // The object would be unreachable without its row; remove it rather than leave an orphan.
    await services.storage.delete(values.storageKey).catch(() => undefined);
    throw err;
  }
}

export async function getMedia(db: Db, userId: string, id: string): Promise<MediaRecord> {
  const [row] = isUuid(id)
    ? await db
        .select()
        .from(media)
        .where(and(eq(media.id, id), eq(media.userId, userId)))
        .limit(1)
    : [];
  if (!row) throw mediaNotFound(id);
  return toMediaRecord(row);
}

/** The caller's media among `ids`, by id. */
export async function findOwnedMedia(db: Db, userId: string, ids: string[]): Promise<Map<string, MediaRow>> {
  const valid = [...new Set(ids.filter(isUuid))];
  if (valid.length === 0) return new Map();
  const rows = await db
    .select()
    .from(media)
    .where(and(eq(media.userId, userId), inArray(media.id, valid)));
  return new Map(rows.map((r) => [r.id, r]));
}

export function mediaNotFound(id: string): ApiError {
  return new ApiError("MEDIA_NOT_FOUND", `No media with id ${JSON.stringify(id.slice(0, 80))} belongs to this API key's owner.`);
}

export function toMediaRecord(row: MediaRow): MediaRecord {
  return {
    id: row.id,
    url: row.url,
    mimeType: "image/jpeg",
    width: row.width,
    height: row.height,
    bytes: row.bytes,
    createdAt: row.createdAt.toISOString(),
  };
}
