/**
 * The gallery through the API, in process: every generated image is an item (base64 answers too), listed
 * newest first, filtered by template and date, paginated; one item by id; another user's item is 404; a
 * delete removes the item and its files. A gallery item posted with `{galleryId}` is copied into media, so
 * deleting the item afterwards leaves a scheduled post's image in place.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";
import { productJpeg } from "./fixtures";

type Json = Record<string, any>;

let h: TestApp;
let owner: { apiKey: string; userId: string };
let other: { apiKey: string };
let product: string;

beforeAll(async () => {
  h = await createTestApp();
  owner = await h.createUser();
  other = await h.createUser();
  product = `data:image/jpeg;base64,${(await productJpeg(240, 320)).toString("base64")}`;
}, 60_000);
afterAll(() => h?.close());

const photo = (extra: Json = {}) => ({ productImages: [{ dataUrl: product }], model: "standard", outputResult: "url", ...extra });

async function request(method: string, path: string, key: string, body?: unknown) {
  const res = await h.app.request(path, {
    method,
    headers: body === undefined ? h.auth(key) : h.json(key),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Json };
}

describe("the gallery", () => {
  const made: Json[] = [];
  beforeAll(async () => {
    for (const body of [
      photo({ promptId: "studio-white-sweep" }),
      photo({ promptId: "studio-plinth", productImages: [{ dataUrl: product, label: "serum" }] }),
      photo({ scenePrompt: "pink marble counter", outputResult: "base64" }),
    ]) {
      const res = await request("POST", "/api/image/product-photography", owner.apiKey, body);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      made.push(res.body.data);
    }
  }, 120_000);

  it("lists every image newest first, base64 answers included, with what made it and its cost", async () => {
    const list = await request("GET", "/api/image/gallery", owner.apiKey);
    expect(list.status).toBe(200);
    expect(list.body.data).toMatchObject({ total: 3, hasMore: false, limit: 20, offset: 0 });
    const items = list.body.data.items as Json[];
    expect(items.map((i) => [i.templateId, i.scenePrompt, i.label])).toEqual([
      [null, "pink marble counter", null],
      ["studio-plinth", null, "serum"],
      ["studio-white-sweep", null, null],
    ]);
    expect(items[2]).toMatchObject({ model: "standard", resolution: "1K", aspectRatio: "1:1", width: 1024, height: 1024, cost: { credits: 4 } });
    expect(items[2]!.imageUrl).toBe(made[0]!.imageUrl);
    expect(items[2]!.thumbnailUrl).toBe(made[0]!.thumbnailUrl);
    // The base64 answer's image is stored once, and is the same PNG.
    const stored = await h.app.request(new URL(items[0]!.imageUrl).pathname);
    expect(stored.status).toBe(200);
    expect(Buffer.from(await stored.arrayBuffer()).toString("base64")).toBe(made[2]!.photoDataUri.split(",")[1]);
  });

  it("filters by template and date, and pages", async () => {
    const plinth = await request("GET", "/api/image/gallery?templateId=studio-plinth", owner.apiKey);
    expect(plinth.body.data.items.map((i: Json) => i.label)).toEqual(["serum"]);
    const today = new Date().toISOString().slice(0, 10);
    expect((await request("GET", `/api/image/gallery?fromDate=${today}&toDate=${today}`, owner.apiKey)).body.data.total).toBe(3);
    expect((await request("GET", "/api/image/gallery?toDate=2020-01-01", owner.apiKey)).body.data.total).toBe(0);
    expect((await request("GET", "/api/image/gallery?fromDate=2999-01-01", owner.apiKey)).body.data.total).toBe(0);
    const first = await request("GET", "/api/image/gallery?limit=2", owner.apiKey);
    const second = await request("GET", "/api/image/gallery?limit=2&offset=2", owner.apiKey);
    expect(first.body.data).toMatchObject({ total: 3, hasMore: true });
    expect(second.body.data).toMatchObject({ total: 3, hasMore: false });
    const ids = [...first.body.data.items, ...second.body.data.items].map((i: Json) => i.id);
    expect(new Set(ids).size).toBe(3);

    const bad = await request("GET", "/api/image/gallery?fromDate=yesterday&limit=0", owner.apiKey);
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.map((d: Json) => d.path).sort()).toEqual(["fromDate", "limit"]);
    expect((await request("GET", "/api/image/gallery?fromDate=2030-01-02&toDate=2030-01-01", owner.apiKey)).status).toBe(422);
    expect((await request("GET", "/api/image/gallery?template=x", owner.apiKey)).body.error.message).toMatch(/did you mean 'templateId'/);
  });

  it("gets one item; another user's item and an unknown id are 404, a malformed id 422", async () => {
    const [item] = (await request("GET", "/api/image/gallery?limit=1", owner.apiKey)).body.data.items as Json[];
    const got = await request("GET", `/api/image/gallery/${item!.id}`, owner.apiKey);
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual(item);
    const foreign = await request("GET", `/api/image/gallery/${item!.id}`, other.apiKey);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.code).toBe("GALLERY_ITEM_NOT_FOUND");
    expect((await request("DELETE", `/api/image/gallery/${item!.id}`, other.apiKey)).status).toBe(404);
    expect((await request("GET", `/api/image/gallery/${crypto.randomUUID()}`, owner.apiKey)).status).toBe(404);
    expect((await request("GET", "/api/image/gallery/not-a-uuid", owner.apiKey)).status).toBe(422);
    expect((await request("GET", "/api/image/gallery", other.apiKey)).body.data.total).toBe(0);
  });

  it("a delete removes the item and its files; the generation is still on the ledger", async () => {
    const { items } = (await request("GET", "/api/image/gallery?templateId=studio-white-sweep", owner.apiKey)).body.data as { items: Json[] };
    const item = items[0]!;
    const deleted = await request("DELETE", `/api/image/gallery/${item.id}`, owner.apiKey);
    expect(deleted).toEqual({ status: 200, body: { data: { id: item.id, deleted: true, filesKept: false } } });
    expect((await h.app.request(new URL(item.imageUrl).pathname)).status).toBe(404);
    expect((await h.app.request(new URL(item.thumbnailUrl).pathname)).status).toBe(404);
    expect((await request("GET", `/api/image/gallery/${item.id}`, owner.apiKey)).status).toBe(404);
    expect((await request("DELETE", `/api/image/gallery/${item.id}`, owner.apiKey)).status).toBe(404);
    const credits = (await request("GET", "/api/image/credits?limit=100", owner.apiKey)).body.data;
    expect(credits.movements.items.filter((m: Json) => m.kind === "charge")).toHaveLength(3);
  });
});

describe("posting a gallery item", () => {
  let page: string;
  beforeAll(async () => {
    const res = await request("POST", "/sandbox/accounts", owner.apiKey, { platform: "pageplatform", name: "Corner Shop", platformAccountId: "3003" });
    expect(res.status).toBe(201);
    page = res.body.data.id;
  });

  it("{galleryId} is copied into media: deleting the item leaves a scheduled post's image in place", async () => {
    const made = await request("POST", "/api/image/product-photography", owner.apiKey, photo({ promptId: "life-kitchen" }));
    expect(made.status).toBe(200);
    const { items } = (await request("GET", "/api/image/gallery?templateId=life-kitchen", owner.apiKey)).body.data as { items: Json[] };
    const item = items[0]!;
    const scheduledFor = new Date(Date.now() + 3600_000).toISOString();
    const res = await h.app.request("/api/v1/social/posts", {
      method: "POST",
      headers: h.json(owner.apiKey, { "Idempotency-Key": `gallery-${item.id}` }),
      body: JSON.stringify({ accountIds: [page], caption: "From the gallery", images: [{ galleryId: item.id }], scheduledFor }),
    });
    const post = ((await res.json()) as Json).data;
    expect(res.status, JSON.stringify(post)).toBe(201);
    expect(post.images).toHaveLength(1);
    expect(post.images[0].mediaId).toMatch(/^[0-9a-f-]{36}$/);
    expect(post.images[0].url).not.toBe(item.imageUrl);
    expect([post.images[0].width, post.images[0].height]).toEqual([1024, 1024]);

    const deleted = await request("DELETE", `/api/image/gallery/${item.id}`, owner.apiKey);
    expect(deleted.body.data.filesKept).toBe(false);
    const image = await h.app.request(new URL(post.images[0].url).pathname);
    expect(image.status).toBe(200);
    expect(image.headers.get("content-type")).toBe("image/jpeg");
    const again = await request("GET", `/api/v1/social/posts/${post.id}`, owner.apiKey);
    expect(again.body.data.images).toEqual(post.images);
    expect(again.body.data.status).toBe("scheduled");
  });

  it("a file a post names by its URL stays when its item is deleted", async () => {
    const made = await request("POST", "/api/image/product-photography", owner.apiKey, photo({ promptId: "studio-grey-gradient" }));
    const [item] = (await request("GET", "/api/image/gallery?templateId=studio-grey-gradient", owner.apiKey)).body.data.items as Json[];
    // A post that names the gallery's own URL (as an https image would be named) keeps those files.
    await h.db.execute(
      (await import("drizzle-orm"))
        .sql`insert into posts (user_id, caption, images, status) values (${owner.userId}::uuid, 'by url', ${JSON.stringify([{ url: made.body.data.imageUrl, width: 1024, height: 1024 }])}::jsonb, 'scheduled')`,
    );
    const deleted = await request("DELETE", `/api/image/gallery/${item!.id}`, owner.apiKey);
    expect(deleted.body.data.filesKept).toBe(true);
    expect((await h.app.request(new URL(item!.imageUrl).pathname)).status).toBe(200);
  });

  it("another user's gallery item, or an unknown one, is 404 naming the image", async () => {
    const [item] = (await request("GET", "/api/image/gallery?limit=1", owner.apiKey)).body.data.items as Json[];
    const otherPage = await request("POST", "/sandbox/accounts", other.apiKey, { platform: "pageplatform", name: "Other", platformAccountId: "3004" });
    for (const galleryId of [item!.id, crypto.randomUUID(), "nope"]) {
      const res = await h.app.request("/api/v1/social/posts", {
        method: "POST",
        headers: h.json(other.apiKey, { "Idempotency-Key": `foreign-${galleryId}` }),
        body: JSON.stringify({ accountIds: [otherPage.body.data.id], caption: "not mine", images: [{ galleryId }] }),
      });
      const body = (await res.json()) as Json;
      expect(res.status).toBe(404);
      expect(body.error.code).toBe("GALLERY_ITEM_NOT_FOUND");
    }
  });
});
