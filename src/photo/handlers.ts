/**
 * Area B's handlers, one per operation of openapi.ts, each typed by its route (`RouteHandler<typeof route,
 * AppEnv>`): what it reads is what the route validated, and what it answers is a response the route declares.
 * The authenticated ones run after the route's key check and rate limit.
 *
 * @example
 * router.openapi(photoRoutes.getJob, getJob, validationHook(photoRoutes.getJob));
 */
import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../http/env";
import { readIdempotencyKey } from "../http/idempotency-key";
import { declaredJson } from "../http/openapi";
import { streamedJson } from "../http/streamed-json";
import { modelView } from "../lib/model-catalog";
import { listTemplates as templates } from "./catalog";
import { demoImage as demo } from "./demo";
import { photoRoutes } from "./openapi";
import { createPhoto as create, jobStatus } from "./service";
import { creditsView, galleryPage } from "./account";
import { deleteGalleryItem as removeItem, galleryView, getGalleryItem as findItem } from "./gallery";

/** The public lists: cacheable for an hour; the route's etag() gives them a strong ETag and answers 304. */
const PUBLIC_CACHE = "public, max-age=3600";

function prefersAsync(header: string | undefined): boolean {
  return !!header && header.split(",").some((p) => p.trim().toLowerCase().split(";")[0]!.trim() === "respond-async");
}

export const listTemplates: RouteHandler<typeof photoRoutes.listTemplates, AppEnv> = (c) => {
  c.header("Cache-Control", PUBLIC_CACHE);
  return c.json({ data: templates(c.get("services").config.publicBaseUrl) }, 200);
};

export const listModels: RouteHandler<typeof photoRoutes.listModels, AppEnv> = (c) => {
  c.header("Cache-Control", PUBLIC_CACHE);
  return c.json({ data: c.get("services").config.photoModels.models.map(modelView) }, 200);
};

export const demoImage: RouteHandler<typeof photoRoutes.demoImage, AppEnv> = async (c) => {
  const id = c.req.valid("param").file.replace(/\.png$/, "");
  const png = await demo(c.get("services"), id);
  c.header("Cache-Control", "public, max-age=86400");
  // The image's version names it, so etag() compares this rather than hashing the PNG.
  c.header("ETag", `"demo-${id}-${png.version}"`);
  return c.body(png.bytes as Uint8Array<ArrayBuffer>, 200, { "Content-Type": "image/png" });
};

/** The answer's `photoDataUri` values are written from the PNGs' bytes as it streams out (src/http/streamed-json.ts). */
export const createPhoto: RouteHandler<typeof photoRoutes.createPhoto, AppEnv> = async (c) => {
  const answer = await create(c.get("services"), c.get("userId"), c.req.valid("json"), {
    idempotencyKey: readIdempotencyKey(c.req.header("idempotency-key")),
    respondAsync: prefersAsync(c.req.header("prefer")),
  });
  for (const [name, value] of Object.entries(answer.headers)) c.header(name, value);
  c.header("Cache-Control", "no-store");
  return declaredJson(photoRoutes.createPhoto, streamedJson(c, answer.body, answer.status), answer.status);
};

export const getJob: RouteHandler<typeof photoRoutes.getJob, AppEnv> = async (c) => {
  c.header("Cache-Control", "no-store");
  const data = await jobStatus(c.get("services"), c.get("userId"), c.req.valid("param").id);
  return declaredJson(photoRoutes.getJob, streamedJson(c, { data }, 200), 200);
};

export const getCredits: RouteHandler<typeof photoRoutes.getCredits, AppEnv> = async (c) => {
  c.header("Cache-Control", "no-store");
  return c.json({ data: await creditsView(c.get("services"), c.get("userId"), c.req.valid("query")) }, 200);
};

export const listGallery: RouteHandler<typeof photoRoutes.listGallery, AppEnv> = async (c) => {
  c.header("Cache-Control", "no-store");
  return c.json({ data: await galleryPage(c.get("services"), c.get("userId"), c.req.valid("query")) }, 200);
};

export const getGalleryItem: RouteHandler<typeof photoRoutes.getGalleryItem, AppEnv> = async (c) => {
  c.header("Cache-Control", "no-store");
  const services = c.get("services");
  return c.json({ data: galleryView(services, await findItem(services, c.get("userId"), c.req.valid("param").id)) }, 200);
};

export const deleteGalleryItem: RouteHandler<typeof photoRoutes.deleteGalleryItem, AppEnv> = async (c) => {
  const id = c.req.valid("param").id;
  const { filesKept } = await removeItem(c.get("services"), c.get("userId"), id);
  return c.json({ data: { id, deleted: true as const, filesKept } }, 200);
};
