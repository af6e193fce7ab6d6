/**
 * The user's gallery: every generated image is kept as an item (its PNG and 384 px JPEG thumbnail in storage
 * under `photo/out/<job>/`), written in the same statement that charges it (credits.ts `settleItem`), so an
 * image in the gallery is an image paid for. Listing is newest first, filtered by template and date;
 * deleting removes the row and its files, unless a post names the files (a post made from a gallery item
 * holds its own copy in media, so it never does unless the image URL itself was posted).
 *
 * @example
 * const page = await listGallery(services, userId, { templateId: "studio-plinth", limit: 20, offset: 0 });
 * await deleteGalleryItem(services, userId, id);
 */
import { and, desc, eq, gte, lt, sql, type SQL } from "drizzle-orm";
import { executeRows } from "../../db/client";
import { galleryItems } from "../../db/schema";
import { ApiError } from "../http/errors";
import type { Services } from "../services";
import type { Price } from "./types";

export type GalleryRow = typeof galleryItems.$inferSelect;

/** What describes an item's image, as written, stored and shown. */
type GalleryItemFields = Pick<GalleryRow, "label" | "templateId" | "scenePrompt" | "model" | "resolution" | "aspectRatio" | "width" | "height">;

export interface NewGalleryItem extends GalleryItemFields {
  userId: string;
  jobId: string;
  itemIndex: number;
  price: Price;
  storageKey: string;
  thumbKey: string;
}

/** The insert of one item as a statement `settleItem` runs with the charge; a second run adds nothing. */
export function galleryInsert(item: NewGalleryItem): SQL {
  return sql`insert into gallery_items (user_id, job_id, item_index, label, template_id, scene_prompt, model, resolution, aspect_ratio,
               width, height, credits, usd, inr, storage_key, thumb_key)
             values (${item.userId}::uuid, ${item.jobId}::uuid, ${item.itemIndex}::int, ${item.label}, ${item.templateId}, ${item.scenePrompt},
               ${item.model}, ${item.resolution}, ${item.aspectRatio}, ${item.width}::int, ${item.height}::int, ${item.price.credits}::int,
               ${item.price.usd}::numeric, ${item.price.inr}::numeric, ${item.storageKey}, ${item.thumbKey})
             on conflict (job_id, item_index) do nothing`;
}

export interface GalleryView extends GalleryItemFields {
  id: string;
  cost: { credits: number; usd: number; inr: number };
  imageUrl: string;
  thumbnailUrl: string;
  createdAt: string;
}

export function galleryView(services: Pick<Services, "storage">, row: GalleryRow): GalleryView {
  return {
    id: row.id,
    label: row.label,
    templateId: row.templateId,
    scenePrompt: row.scenePrompt,
    model: row.model,
    resolution: row.resolution,
    aspectRatio: row.aspectRatio,
    width: row.width,
    height: row.height,
    cost: { credits: row.credits, usd: Number(row.usd), inr: Number(row.inr) },
    imageUrl: services.storage.urlFor(row.storageKey),
    thumbnailUrl: services.storage.urlFor(row.thumbKey),
    createdAt: row.createdAt.toISOString(),
  };
}

export interface GalleryQuery {
  templateId?: string;
  /** Inclusive. */
  from?: Date;
  /** Exclusive. */
  to?: Date;
  limit: number;
  offset: number;
}

export async function listGallery(services: Pick<Services, "db">, userId: string, q: GalleryQuery): Promise<{ items: GalleryRow[]; total: number }> {
  const where = and(
    eq(galleryItems.userId, userId),
    q.templateId !== undefined ? eq(galleryItems.templateId, q.templateId) : undefined,
    q.from ? gte(galleryItems.createdAt, q.from) : undefined,
    q.to ? lt(galleryItems.createdAt, q.to) : undefined,
  );
  const [items, [count]] = await Promise.all([
    services.db.select().from(galleryItems).where(where).orderBy(desc(galleryItems.createdAt), desc(galleryItems.id)).limit(q.limit).offset(q.offset),
    services.db.select({ n: sql<number>`count(*)::int` }).from(galleryItems).where(where),
  ]);
  return { items, total: Number(count?.n ?? 0) };
}

/** The item if the user owns it; 404 GALLERY_ITEM_NOT_FOUND otherwise (another user's item is not found). */
export async function getGalleryItem(services: Pick<Services, "db">, userId: string, id: string): Promise<GalleryRow> {
  const [row] = isUuid(id)
    ? await services.db
        .select()
        .from(galleryItems)
        .where(and(eq(galleryItems.id, id), eq(galleryItems.userId, userId)))
        .limit(1)
    : [];
  if (!row) throw galleryItemNotFound(id);
  return row;
}

export function galleryItemNotFound(id: string): ApiError {
  return new ApiError("GALLERY_ITEM_NOT_FOUND", `No gallery item ${JSON.stringify(id.slice(0, 64))} for this key's owner.`);
}

/**
 * Removes the item; its files go too unless a post (of any status) names the image or thumbnail URL, since
 * media used by queued or published posts must stay. Returns whether the files were kept.
 */
export async function deleteGalleryItem(services: Pick<Services, "db" | "storage" | "log">, userId: string, id: string): Promise<{ filesKept: boolean }> {
  const row = await getGalleryItem(services, userId, id);
  const deleted = await services.db
    .delete(galleryItems)
    .where(and(eq(galleryItems.id, row.id), eq(galleryItems.userId, userId)))
    .returning({ id: galleryItems.id });
  if (deleted.length === 0) throw galleryItemNotFound(id);
  const urls = [services.storage.urlFor(row.storageKey), services.storage.urlFor(row.thumbKey)];
  const [used] = await executeRows<{ n: number }>(
    services.db,
    sql`select count(*)::int as n from posts p, jsonb_array_elements(p.images) as img
        where p.user_id = ${userId}::uuid and img->>'url' in (${urls[0]!}, ${urls[1]!})`,
  );
  if (Number(used?.n ?? 0) > 0) return { filesKept: true };
  await Promise.all(
    [row.storageKey, row.thumbKey].map((key) =>
      services.storage.delete(key).catch((err) => services.log.warn("gallery file not deleted", { key, error: String(err) })),
    ),
  );
  return { filesKept: false };
}

/** The PNG of a gallery item the user owns (for posting it); 404 when the item or its file is gone. */
export async function galleryImageBytes(services: Pick<Services, "db" | "storage">, userId: string, id: string): Promise<Uint8Array> {
  const row = await getGalleryItem(services, userId, id);
  const object = await services.storage.get(row.storageKey);
  if (!object) throw galleryItemNotFound(id);
  return object.bytes;
}

function isUuid(value: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
}
