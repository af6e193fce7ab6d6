/**
 * One rule for unknown and repeated input in every area (src/http/validate.ts): a body field or query
 * parameter an operation does not declare is 422 VALIDATION_FAILED naming it (with the known name it
 * resembles), a query parameter given twice is 422 naming it, a number parameter that is not a whole number
 * says its range, and the OpenAPI document says so. Checked through HTTP on every operation of areas A, B
 * and C, the webhooks and the sandbox's control routes; the same requests without the mistake still pass.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makePng } from "../helpers/images";
import { body, createSocialTestApp, dataUri, type SocialTestApp } from "../helpers/social";
import { productDataUrl } from "../photo/fixtures";

let h: SocialTestApp;
let u: { userId: string; apiKey: string; page: string };
let png: Buffer;
let product: string;
let qrPng: string;
/** A webhook endpoint of the user's, for the operations on one endpoint. */
let endpoint: string;

const ID = "0b9f7a52-4c53-4c5e-9d0e-5d7c0f6a8e11";

beforeAll(async () => {
  h = await createSocialTestApp({ env: { RATE_LIMIT_PHOTO: "1000", RATE_LIMIT_QR: "1000" } });
  const user = await h.createUser();
  const connected = await h.app.request("/sandbox/accounts", {
    method: "POST",
    headers: h.json(user.apiKey),
    body: JSON.stringify({ platform: "pageplatform", name: "Shop", platformAccountId: "4242" }),
  });
  expect(connected.status).toBe(201);
  u = { ...user, page: "pageplatform:4242" };
  png = await makePng(400, 400);
  product = await productDataUrl();
  const qr = await h.app.request(`/api/qr-code/generate-base64/${u.apiKey}/hello`);
  qrPng = ((await qr.json()) as { data: { qrCodeDataUrl: string } }).data.qrCodeDataUrl;
  const made = await h.app.request("/api/v1/webhooks", {
    method: "POST",
    headers: h.json(user.apiKey),
    body: JSON.stringify({ url: "https://hooks.example.com/a" }),
  });
  expect(made.status).toBe(201);
  endpoint = ((await made.json()) as { data: { id: string } }).data.id;
}, 60_000);
afterAll(async () => h?.close());

interface Operation {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** As the OpenAPI documents write it, `{param}` for path parameters. */
  template: string;
  path: () => string;
  body?: () => unknown;
  headers?: () => Record<string, string>;
  /** A query parameter the operation declares, to repeat. */
  declared?: [string, string];
}

const json = (extra: Record<string, string> = {}) => h.json(u.apiKey, extra);

/** Every operation that takes a JSON body or a query string, with a request it accepts. */
const OPERATIONS: Operation[] = [
  { method: "GET", template: "/api/qr-code/generate/{apiKey}/{text}", path: () => `/api/qr-code/generate/${u.apiKey}/hello`, declared: ["size", "300"] },
  {
    method: "GET",
    template: "/api/qr-code/generate-base64/{apiKey}/{text}",
    path: () => `/api/qr-code/generate-base64/${u.apiKey}/hello`,
    declared: ["size", "300"],
  },
  { method: "POST", template: "/api/qr-code/generate", path: () => "/api/qr-code/generate", body: () => ({ type: "text", value: "x" }) },
  { method: "POST", template: "/api/qr-code/decode", path: () => "/api/qr-code/decode", body: () => ({ base64: qrPng }) },
  { method: "GET", template: "/api/image/product-photography-prompts", path: () => "/api/image/product-photography-prompts" },
  { method: "GET", template: "/api/image/image-model-options", path: () => "/api/image/image-model-options" },
  {
    method: "POST",
    template: "/api/image/product-photography",
    path: () => "/api/image/product-photography",
    body: () => ({ productImages: [{ dataUrl: product }], promptId: "studio-white-sweep", model: "standard" }),
  },
  { method: "GET", template: "/api/image/product-photography/jobs/{id}", path: () => `/api/image/product-photography/jobs/${ID}` },
  { method: "GET", template: "/api/image/credits", path: () => "/api/image/credits", declared: ["limit", "5"] },
  { method: "GET", template: "/api/image/gallery", path: () => "/api/image/gallery", declared: ["templateId", "studio-plinth"] },
  { method: "GET", template: "/api/image/gallery/{id}", path: () => `/api/image/gallery/${ID}` },
  { method: "DELETE", template: "/api/image/gallery/{id}", path: () => `/api/image/gallery/${ID}` },
  { method: "GET", template: "/api/v1/social/accounts", path: () => "/api/v1/social/accounts" },
  { method: "POST", template: "/api/v1/social/media", path: () => "/api/v1/social/media", body: () => ({ base64: dataUri(png) }) },
  { method: "GET", template: "/api/v1/social/media/{id}", path: () => `/api/v1/social/media/${ID}` },
  {
    method: "POST",
    template: "/api/v1/social/posts",
    path: () => "/api/v1/social/posts",
    body: () => ({ accountIds: u.page, caption: "Closed input" }),
    headers: () => ({ "Idempotency-Key": crypto.randomUUID() }),
  },
  { method: "GET", template: "/api/v1/social/posts", path: () => "/api/v1/social/posts", declared: ["limit", "5"] },
  { method: "GET", template: "/api/v1/social/posts/{id}", path: () => `/api/v1/social/posts/${ID}` },
  { method: "DELETE", template: "/api/v1/social/posts/{id}", path: () => `/api/v1/social/posts/${ID}` },
  {
    method: "POST",
    template: "/sandbox/accounts",
    path: () => "/sandbox/accounts",
    body: () => ({ platform: "pageplatform", name: "Shop", platformAccountId: "4242" }),
  },
  {
    method: "POST",
    template: "/api/v1/webhooks",
    path: () => "/api/v1/webhooks",
    body: () => ({ url: "https://hooks.example.com/b", events: ["post.published"] }),
  },
  { method: "GET", template: "/api/v1/webhooks", path: () => "/api/v1/webhooks" },
  { method: "GET", template: "/api/v1/webhooks/{id}", path: () => `/api/v1/webhooks/${endpoint}` },
  { method: "PATCH", template: "/api/v1/webhooks/{id}", path: () => `/api/v1/webhooks/${endpoint}`, body: () => ({ description: "orders" }) },
  { method: "DELETE", template: "/api/v1/webhooks/{id}", path: () => `/api/v1/webhooks/${ID}` },
  { method: "POST", template: "/api/v1/webhooks/{id}/rotate-secret", path: () => `/api/v1/webhooks/${ID}/rotate-secret` },
  { method: "POST", template: "/api/v1/webhooks/{id}/test", path: () => `/api/v1/webhooks/${ID}/test` },
  { method: "GET", template: "/api/v1/webhooks/{id}/deliveries", path: () => `/api/v1/webhooks/${endpoint}/deliveries`, declared: ["limit", "5"] },
  {
    method: "POST",
    template: "/api/v1/webhooks/{id}/deliveries/{deliveryId}/replay",
    path: () => `/api/v1/webhooks/${endpoint}/deliveries/${ID}/replay`,
  },
  { method: "POST", template: "/sandbox/faults", path: () => "/sandbox/faults", body: () => ({ accountId: u.page, kind: "transient", times: 0 }) },
  { method: "GET", template: "/sandbox/posts", path: () => "/sandbox/posts", declared: ["accountId", "pageplatform:4242"] },
];

async function send(op: Operation, query: string, bodyOverride?: unknown): Promise<Response> {
  const init: RequestInit = { method: op.method, headers: op.body ? json(op.headers?.() ?? {}) : h.auth(u.apiKey) };
  const payload = bodyOverride ?? op.body?.();
  if (payload !== undefined) init.body = JSON.stringify(payload);
  return h.app.request(`${op.path()}${query}`, init);
}

async function error422(res: Response) {
  const out = await body(res);
  expect(res.status, JSON.stringify(out)).toBe(422);
  expect(out.error.code).toBe("VALIDATION_FAILED");
  return out.error as { message: string; details: Array<{ path: string; message: string }> };
}

/** Operations outside the rule: they take no input and, like the documents and files, ignore a query string. */
const NO_INPUT = ["GET /", "GET /health", "GET /api/image/demo/{file}"];

describe("the table covers every operation", () => {
  it("holds every operation of the OpenAPI document (but the input-less ones) and every QR and sandbox control route", async () => {
    const table = new Set(OPERATIONS.map((op) => `${op.method} ${op.template}`));
    const paths = (
      (await (await h.app.request("/openapi.json")).json()) as { paths: Record<string, Record<string, { parameters?: unknown[]; requestBody?: unknown }>> }
    ).paths;
    for (const [path, item] of Object.entries(paths)) {
      for (const [method, op] of Object.entries(item)) {
        const name = `${method.toUpperCase()} ${path}`;
        if (NO_INPUT.includes(name)) {
          expect(op.requestBody, name).toBeUndefined();
          expect(
            (op.parameters ?? []).filter((p) => (p as { in: string }).in === "query"),
            name,
          ).toEqual([]);
          continue;
        }
        expect(table, name).toContain(name);
      }
    }
    const routes = h.app.routes.filter(
      (r) => r.method !== "ALL" && (r.path.startsWith("/api/qr-code/") || /^\/sandbox\/(accounts|faults|posts)$/.test(r.path)),
    );
    expect(routes.length).toBeGreaterThan(4);
    for (const r of routes) {
      const template = r.path.replace(/:([A-Za-z]+)(\{[^}]*\})?/g, "{$1}");
      expect(table, `${r.method} ${r.path}`).toContain(`${r.method} ${template}`);
    }
  });
});

describe("unknown query parameters: 422 naming the parameter, on every operation", () => {
  it.each(OPERATIONS.map((op) => [`${op.method} ${op.template}`, op] as const))("%s", async (_name, op) => {
    const err = await error422(await send(op, "?colour=red"));
    expect(err.details[0]!.path).toBe("colour");
    expect(err.details[0]!.message).toMatch(/^is not a known query parameter/);
    expect(err.message).toMatch(/^colour: is not a known query parameter/);
    if (!op.declared) expect(err.message).toContain("this operation takes none");
  });

  it("names the declared parameter an unknown one resembles, or lists the declared ones", async () => {
    const near = await error422(await h.app.request("/api/v1/social/posts?Limit=5", { headers: h.auth(u.apiKey) }));
    expect(near.message).toBe("Limit: is not a known query parameter (did you mean 'limit'?)");
    const far = await error422(await h.app.request("/api/v1/social/posts?page=2", { headers: h.auth(u.apiKey) }));
    expect(far.message).toBe("page: is not a known query parameter; this operation takes status, platform, fromDate, toDate, limit, offset");
  });

  it("an unencoded URL's own query string on the QR GET routes is named, with what to do", async () => {
    const err = await error422(await h.app.request(`/api/qr-code/generate/${u.apiKey}/https://example.com/p?id=5`));
    expect(err.message).toBe(
      "id: is not a known query parameter; this operation takes size, fgColor, bgColor, isTransparent (if it belongs to the text, URL-encode the text)",
    );
    const encoded = await h.app.request(`/api/qr-code/generate/${u.apiKey}/${encodeURIComponent("https://example.com/p?id=5")}`);
    expect(encoded.status).toBe(200);
  });
});

describe("repeated query parameters: 422 naming the parameter and the count", () => {
  it.each(OPERATIONS.filter((op) => op.declared).map((op) => [`${op.method} ${op.template}`, op] as const))("%s", async (_name, op) => {
    const [name, value] = op.declared!;
    const err = await error422(await send(op, `?${name}=${encodeURIComponent(value)}&${name}=${encodeURIComponent(value)}`));
    expect(err.message).toBe(`${name}: was given 2 times; give it once`);
    expect(err.details).toEqual([{ path: name, message: "was given 2 times; give it once" }]);
    // Given once, the same value is accepted.
    expect((await send(op, `?${name}=${encodeURIComponent(value)}`)).status).toBe(200);
  });

  it("counts every repeat, names each repeated parameter, and an unknown repeated one once, as unknown", async () => {
    const three = await error422(await h.app.request("/api/v1/social/posts?status=queued&status=failed&status=published", { headers: h.auth(u.apiKey) }));
    expect(three.message).toBe("status: was given 3 times; give it once");
    const two = await error422(await h.app.request("/api/v1/social/posts?limit=1&limit=2&offset=0&offset=0", { headers: h.auth(u.apiKey) }));
    expect(two.details).toEqual([
      { path: "limit", message: "was given 2 times; give it once" },
      { path: "offset", message: "was given 2 times; give it once" },
    ]);
    const unknown = await error422(await h.app.request("/api/v1/social/posts?x=1&x=2", { headers: h.auth(u.apiKey) }));
    expect(unknown.details).toHaveLength(1);
    expect(unknown.details[0]!.message).toMatch(/^is not a known query parameter/);
  });
});

describe("number parameters that are not whole numbers in range", () => {
  it("GET /api/v1/social/posts limit and offset say their range, not zod's words", async () => {
    for (const q of ["limit=abc", "limit=", "limit=1.5", "limit=-1", "limit=0", "limit=101", "limit=1e2", "limit=0x10"]) {
      const err = await error422(await h.app.request(`/api/v1/social/posts?${q}`, { headers: h.auth(u.apiKey) }));
      expect(err.message, q).toBe("limit: must be a whole number from 1 to 100");
    }
    const offset = await error422(await h.app.request("/api/v1/social/posts?offset=ten", { headers: h.auth(u.apiKey) }));
    expect(offset.message).toBe("offset: must be a whole number from 0 to 10000");
    const ok = await h.app.request("/api/v1/social/posts?limit=100&offset=0", { headers: h.auth(u.apiKey) });
    expect(ok.status).toBe(200);
    expect((await body(ok)).data).toMatchObject({ limit: 100, offset: 0 });
  });

  it("the QR GET size says its range", async () => {
    const err = await error422(await h.app.request(`/api/qr-code/generate/${u.apiKey}/hello?size=big`));
    expect(err.message).toBe("size: must be a whole number of pixels from 64 to 4096");
  });
});

describe("a wrong type or a value outside a list is said in the house words, not zod's", () => {
  it("A, B and C", async () => {
    const photo = OPERATIONS.find((op) => op.template === "/api/image/product-photography")!;
    const valid = photo.body!() as Record<string, unknown>;
    const resolution = await error422(await send(photo, "", { ...valid, resolution: "8K" }));
    expect(resolution.details).toEqual([{ path: "resolution", message: "must be one of 1K, 2K, 4K" }]);
    const images = await error422(await send(photo, "", { ...valid, productImages: product }));
    expect(images.details).toEqual([{ path: "productImages", message: "must be an array, not a string" }]);

    const generate = OPERATIONS.find((op) => op.template === "/api/qr-code/generate")!;
    const encryption = await error422(await send(generate, "", { type: "wifi", ssid: "Cafe", password: "secret123", encryption: "WPA3" }));
    expect(encryption.details).toEqual([{ path: "encryption", message: "must be one of WPA, WEP, nopass" }]);
    // Area A's fields say it in words of their own, which stay.
    const transparent = await error422(await send(generate, "", { type: "text", value: "x", isTransparent: "yes" }));
    expect(transparent.details).toEqual([{ path: "isTransparent", message: "must be true or false" }]);

    const create = OPERATIONS.find((op) => op.template === "/api/v1/social/posts" && op.method === "POST")!;
    const hashtags = await error422(await send(create, "", { accountIds: u.page, caption: "x", hashtags: "#a #b" }));
    expect(hashtags.details).toEqual([{ path: "hashtags", message: "must be an array, not a string" }]);
    const list = await error422(await h.app.request("/api/v1/social/posts?status=done", { headers: h.auth(u.apiKey) }));
    expect(list.details[0]?.message).toMatch(/^must be one of scheduled, queued, .*, cancelled$/);
    const nothing = await error422(await h.app.request(create.path(), { method: "POST", headers: json(create.headers?.() ?? {}), body: "null" }));
    expect(nothing.details).toEqual([{ path: "(body)", message: "must be an object, not null" }]);

    // A number that must be whole, and a value outside a list, on the sandbox's control routes.
    const faults = OPERATIONS.find((op) => op.template === "/sandbox/faults")!;
    const times = await error422(await send(faults, "", { accountId: u.page, kind: "transient", times: 1.5 }));
    expect(times.details).toEqual([{ path: "times", message: "must be a whole number" }]);
    const kind = await error422(await send(faults, "", { accountId: u.page, kind: "flaky", times: 1 }));
    expect(kind.details[0]?.message).toMatch(/^must be one of transient, /);
  });
});

describe("unknown body fields: 422 naming the field, in every area", () => {
  it("A: POST /api/qr-code/generate and /decode", async () => {
    const generate = OPERATIONS.find((op) => op.template === "/api/qr-code/generate")!;
    const typo = await error422(await send(generate, "", { type: "text", value: "x", fgColour: "#1A73E8" }));
    expect(typo.message).toBe("fgColour: is not a known field (did you mean 'fgColor'?)");
    // A field of another QR type is unknown for this one.
    const other = await error422(await send(generate, "", { type: "wifi", ssid: "Cafe", password: "secret123", encryption: "WPA", to: "a@example.com" }));
    expect(other.details).toEqual([{ path: "to", message: "is not a known field" }]);
    const decode = OPERATIONS.find((op) => op.template === "/api/qr-code/decode")!;
    const upper = await error422(await send(decode, "", { base64: qrPng, URL: "https://example.com/qr.png" }));
    expect(upper.message).toBe("URL: is not a known field (did you mean 'url'?)");
  });

  it("B: POST /api/image/product-photography, top level and inside productImages", async () => {
    const photo = OPERATIONS.find((op) => op.template === "/api/image/product-photography")!;
    const valid = photo.body!() as Record<string, unknown>;
    const err = await error422(await send(photo, "", { ...valid, logosize: 0.2, productImages: [{ dataUrl: product, lable: "serum" }] }));
    expect(err.details).toEqual([
      { path: "productImages.0.lable", message: "is not a known field (did you mean 'label'?)" },
      { path: "logosize", message: "is not a known field (did you mean 'logoSize'?)" },
    ]);
    expect(err.message).toBe("productImages.0.lable: is not a known field (did you mean 'label'?) (and 1 more)");
  });

  it("C: POST /api/v1/social/posts and /media, and nothing is created", async () => {
    const before = (await body(await h.app.request("/api/v1/social/posts", { headers: h.auth(u.apiKey) }))).data.total;
    const posts = OPERATIONS.find((op) => op.template === "/api/v1/social/posts" && op.method === "POST")!;
    const err = await error422(await send(posts, "", { accountIds: u.page, caption: "x", hashtag: ["sale"] }));
    expect(err.message).toBe("hashtag: is not a known field (did you mean 'hashtags'?)");
    const nested = await error422(await send(posts, "", { accountIds: u.page, images: [{ url: "https://cdn.example.com/a.jpg", mediaID: "x" }] }));
    expect(nested.details).toEqual([{ path: "images.0.mediaID", message: "is not a known field (did you mean 'mediaId'?)" }]);
    const media = OPERATIONS.find((op) => op.template === "/api/v1/social/media")!;
    const mime = await error422(await send(media, "", { base64: dataUri(png), mimetype: "image/png" }));
    expect(mime.message).toBe("mimetype: is not a known field (did you mean 'mimeType'?)");
    expect((await body(await h.app.request("/api/v1/social/posts", { headers: h.auth(u.apiKey) }))).data.total).toBe(before);
  });

  it("sandbox control routes", async () => {
    const accounts = OPERATIONS.find((op) => op.template === "/sandbox/accounts")!;
    const err = await error422(await send(accounts, "", { platform: "pageplatform", nmae: "Shop" }));
    // The typo is the cause, so it comes first; the field it left out is then "required".
    expect(err.details).toEqual([
      { path: "nmae", message: "is not a known field (did you mean 'name'?)" },
      { path: "name", message: "is required" },
    ]);
  });

  it("a hostile body (a huge name, thousands of unknown fields) gets a bounded answer", async () => {
    const generate = OPERATIONS.find((op) => op.template === "/api/qr-code/generate")!;
    const long = await error422(await send(generate, "", { type: "text", value: "x", ["k".repeat(100_000)]: 1 }));
    expect(long.details[0]!.path).toHaveLength(65);
    const many = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`extra${i}`, i]));
    const err = await error422(await send(generate, "", { type: "text", value: "x", ...many }));
    expect(err.details).toHaveLength(50);
    expect(err.message).toMatch(/^extra0: is not a known field.* \(and 4999 more\)$/);
  });
});

describe("a body sent to an operation that takes none: 422, not ignored", () => {
  it('DELETE a post, a gallery image, an endpoint; rotate, test, replay: {"x":1} is refused, {} and nothing are not', async () => {
    const ops: Array<[string, string]> = [
      ["DELETE", `/api/v1/social/posts/${ID}`],
      ["DELETE", `/api/image/gallery/${ID}`],
      ["DELETE", `/api/v1/webhooks/${ID}`],
      ["POST", `/api/v1/webhooks/${endpoint}/rotate-secret`],
      ["POST", `/api/v1/webhooks/${ID}/test`],
      ["POST", `/api/v1/webhooks/${ID}/deliveries/${ID}/replay`],
    ];
    for (const [method, path] of ops) {
      const refused = await h.app.request(path, { method, headers: json(), body: JSON.stringify({ x: 1 }) });
      expect(refused.status, `${method} ${path}`).toBe(422);
      expect(((await refused.json()) as any).error.details).toEqual([{ path: "(body)", message: "this operation takes no body; send none" }]);
      const text = await h.app.request(path, { method, headers: { ...h.auth(u.apiKey), "content-type": "text/plain" }, body: "please" });
      expect([text.status, ((await text.json()) as any).error.code], `${method} ${path} text`).toEqual([415, "UNSUPPORTED_MEDIA_TYPE"]);
      for (const empty of ["{}", ""]) {
        const res = await h.app.request(path, { method, headers: json(), body: empty });
        expect(res.status, `${method} ${path} ${JSON.stringify(empty)}`).not.toBe(422);
      }
    }
  });
});

describe("the same requests without the mistake still pass", () => {
  it.each(OPERATIONS.filter((op) => op.body).map((op) => [`${op.method} ${op.template}`, op] as const))("%s", async (_name, op) => {
    const res = await send(op, "");
    expect([200, 201, 202], `${op.template}: ${(await res.clone().text()).slice(0, 200)}`).toContain(res.status);
  });
});

describe("the OpenAPI document states the rule", () => {
  it.each(["/openapi.json"])("%s: closed request bodies and the rule in the description", async (path) => {
    const doc = (await (await h.app.request(path)).json()) as any;
    expect(doc.info.description).toContain("Unknown input is refused, never ignored");
    expect(doc.info.description).toContain("`limit: was given 2 times; give it once`");
    const resolve = (s: any): any => (s?.$ref ? doc.components.schemas[s.$ref.split("/").pop()] : s);
    const objects: any[] = [];
    const walk = (s: any) => {
      s = resolve(s);
      if (!s || objects.includes(s)) return;
      if (s.type === "object" || s.properties) objects.push(s);
      for (const branch of [...(s.anyOf ?? []), ...(s.oneOf ?? []), ...(s.allOf ?? [])]) walk(branch);
      for (const prop of Object.values<any>(s.properties ?? {})) walk(prop);
      if (s.items) walk(s.items);
    };
    for (const item of Object.values<any>(doc.paths))
      for (const op of Object.values<any>(item)) if (op.requestBody) walk(op.requestBody.content["application/json"].schema);
    expect(objects.length).toBeGreaterThan(0);
    for (const schema of objects) expect(schema.additionalProperties, JSON.stringify(Object.keys(schema.properties ?? {}))).toBe(false);
  });
});
