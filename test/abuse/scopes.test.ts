/**
 * API key scopes through HTTP: every operation of the OpenAPI document, called with a key that lacks its
 * scope, answers 403 INSUFFICIENT_SCOPE naming the scope, and with a key of that scope alone gets past
 * authentication (the table is built from the document, so a new operation cannot forget its scope). A
 * `qr` key, the one meant for public pages, works on area A and nowhere else. The hub's form and the admin
 * commands make and list scoped keys.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";
import { allScopesBut, scopeTable } from "../helpers/scope-table";
import { runAdminCommand } from "../../functions/node/admin-commands";
import { createHubTest, type HubTest } from "../hub/hub-client";
import type { ApiKeyScope } from "../../src/lib/scopes";

let h: TestApp;
let userId: string;
let table: ReturnType<typeof scopeTable>;
const keys = new Map<string, string>();

async function keyWith(scopes: ApiKeyScope[]): Promise<string> {
  const name = scopes.join(",");
  if (!keys.has(name)) keys.set(name, await h.createKey(userId, name, scopes));
  return keys.get(name)!;
}

beforeAll(async () => {
  h = await createTestApp({ env: { RATE_LIMIT_QR: "1000", RATE_LIMIT_PHOTO: "1000", RATE_LIMIT_SOCIAL_READ: "1000", RATE_LIMIT_SOCIAL_WRITE: "1000" } });
  ({ userId } = await h.createUser());
  table = scopeTable(await (await h.app.request("/openapi.json")).json());
});
afterAll(() => h.close());

const send = (c: ReturnType<typeof scopeTable>[number], key: string | null) => {
  const { path, init } = c.request(key);
  return h.app.request(path, init);
};

describe("every operation of the OpenAPI document", () => {
  it("the table covers every area's operations", () => {
    expect(new Set(table.map((c) => c.scope))).toEqual(new Set(["qr", "photo", "social", null]));
    expect(table.filter((c) => c.scope === "social").length).toBeGreaterThanOrEqual(7);
  });

  it("an operation that names no scope answers without credentials (else it forgot its scope)", async () => {
    for (const c of table.filter((c) => c.scope === null)) {
      const res = await send(c, null);
      expect([401, 403], `${c.name} answered ${res.status} without credentials but declares no x-required-scope`).not.toContain(res.status);
    }
  });

  it("a key without the operation's scope gets 403 INSUFFICIENT_SCOPE naming the scope", async () => {
    for (const c of table.filter((c) => c.scope !== null)) {
      const res = await send(c, await keyWith(allScopesBut(c.scope!)));
      const body = (await res.json()) as { error?: { code: string; message: string } };
      expect(res.status, c.name).toBe(403);
      expect(body.error?.code, c.name).toBe("INSUFFICIENT_SCOPE");
      expect(body.error?.message, c.name).toContain(`needs the ${c.scope} scope`);
    }
  });

  it("a key of that scope alone gets past authentication", async () => {
    for (const c of table.filter((c) => c.scope !== null)) {
      const res = await send(c, await keyWith([c.scope!]));
      expect([401, 403], `${c.name} answered ${res.status} to a ${c.scope} key`).not.toContain(res.status);
    }
  });
});

describe("a qr key, as put into a public page", () => {
  let qrKey: string;
  beforeAll(async () => {
    qrKey = await keyWith(["qr"]);
  });

  it("makes QR codes by path and by header", async () => {
    const png = await h.app.request(`/api/qr-code/generate/${qrKey}/hello`);
    expect(png.status).toBe(200);
    expect(png.headers.get("content-type")).toBe("image/png");
    const json = await h.app.request("/api/qr-code/generate", {
      method: "POST",
      headers: h.json(qrKey),
      body: JSON.stringify({ type: "url", value: "https://example.com" }),
    });
    expect(json.status).toBe(200);
  });

  it("cannot publish, buy photos or drive the sandbox", async () => {
    const post = await h.app.request("/api/v1/social/posts", {
      method: "POST",
      headers: h.json(qrKey, { "Idempotency-Key": crypto.randomUUID() }),
      body: JSON.stringify({ accountIds: ["pageplatform:1"], caption: "hi" }),
    });
    expect(post.status).toBe(403);
    const photo = await h.app.request("/api/image/product-photography", {
      method: "POST",
      headers: h.json(qrKey),
      body: JSON.stringify({ productImages: [], promptId: "studio-white-sweep" }),
    });
    expect(photo.status).toBe(403);
    expect(((await photo.json()) as { error: { message: string } }).error.message).toMatch(/may call only qr routes; this route needs the photo scope/);
    for (const path of ["/sandbox/accounts", "/sandbox/posts"]) {
      expect((await h.app.request(path, { headers: h.auth(qrKey) })).status, path).toBe(403);
    }
  });

  it("an all-areas key still calls every area", async () => {
    const { apiKey } = await h.createUser();
    expect((await h.app.request("/api/v1/social/accounts", { headers: h.auth(apiKey) })).status).toBe(200);
    expect((await h.app.request(`/api/qr-code/generate/${apiKey}/hello`)).status).toBe(200);
  });
});

describe("a qr key limited to the shop's own pages", () => {
  let key: string;
  beforeAll(async () => {
    const email = `pages-${crypto.randomUUID().slice(0, 8)}@example.test`;
    await runAdminCommand(h.db, { command: "user:create", email });
    key = (
      await runAdminCommand(h.db, {
        command: "key:create",
        email,
        name: "menu page",
        scopes: "qr",
        origins: "https://shop.example, https://www.shop.example:8443",
      })
    ).output;
  });
  const png = (headers: Record<string, string>) => h.app.request(`/api/qr-code/generate/${key}/hello`, { headers });

  it("works from those pages (Referer or Origin)", async () => {
    expect((await png({ Referer: "https://shop.example/menu?table=4" })).status).toBe(200);
    expect((await png({ Referer: "https://www.shop.example:8443/" })).status).toBe(200);
    expect((await png({ Origin: "https://shop.example" })).status).toBe(200);
    const post = await h.app.request("/api/qr-code/generate", {
      method: "POST",
      headers: h.json(key, { Origin: "https://shop.example" }),
      body: JSON.stringify({ type: "text", value: "hi" }),
    });
    expect(post.status).toBe(200);
  });

  it("is refused from another site, a look-alike, or with no page named", async () => {
    for (const headers of [
      { Referer: "https://evil.example/copy" } as Record<string, string>,
      { Referer: "https://shop.example.evil.example/" },
      { Referer: "http://shop.example/" },
      { Origin: "null" },
      {},
    ]) {
      const res = await png(headers);
      expect(res.status, JSON.stringify(headers)).toBe(403);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code).toBe("ORIGIN_NOT_ALLOWED");
      expect(body.error.message).toContain("may be used only from pages on https://shop.example, https://www.shop.example:8443");
    }
  });

  it("a page's script may call area A across origins (preflight, then the call); other areas answer no CORS headers", async () => {
    const preflight = await h.app.request("/api/qr-code/generate", {
      method: "OPTIONS",
      headers: { Origin: "https://shop.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("*");
    expect(preflight.headers.get("access-control-allow-methods")?.split(",")).toContain("POST");
    expect(preflight.headers.get("access-control-allow-headers")?.toLowerCase().split(",")).toEqual(["authorization", "content-type"]);
    expect(preflight.headers.get("access-control-allow-credentials")).toBeNull();
    // A preflight names the path's own methods: the GET path's, GET and HEAD only.
    const getPreflight = await h.app.request("/api/qr-code/generate/-/hello", {
      method: "OPTIONS",
      headers: { Origin: "https://shop.example", "Access-Control-Request-Method": "GET" },
    });
    expect(getPreflight.status).toBe(204);
    expect(getPreflight.headers.get("access-control-allow-methods")).toBe("GET,HEAD");
    expect(preflight.headers.get("access-control-allow-methods")).toBe("POST");

    const post = await h.app.request("/api/qr-code/generate", {
      method: "POST",
      headers: h.json(key, { Origin: "https://shop.example" }),
      body: JSON.stringify({ type: "text", value: "hi" }),
    });
    expect(post.status).toBe(200);
    expect(post.headers.get("access-control-allow-origin")).toBe("*");
    expect(post.headers.get("access-control-expose-headers")).toContain("X-Request-Id");
    // An <img> or fetch() of the PNG: the same two headers, beside the answer's own.
    const get = await png({ Origin: "https://shop.example" });
    expect(get.status).toBe(200);
    expect(get.headers.get("content-type")).toBe("image/png");
    expect(get.headers.get("access-control-allow-origin")).toBe("*");
    expect(get.headers.get("access-control-expose-headers")?.split(",")).toEqual(expect.arrayContaining(["ETag", "RateLimit", "X-QR-Warnings"]));
    expect(get.headers.get("etag")).toMatch(/^"[0-9a-f]+"$/);
    expect(get.headers.get("x-content-type-options")).toBe("nosniff");
    // Another site's page may ask, and reads the refusal: the key's pages are still the key's.
    const refused = await png({ Origin: "https://evil.example" });
    expect(refused.status).toBe(403);
    expect(refused.headers.get("access-control-allow-origin")).toBe("*");

    const social = await h.app.request("/api/v1/social/accounts", { headers: { ...h.auth(key), Origin: "https://shop.example" } });
    expect(social.headers.get("access-control-allow-origin")).toBeNull();
    const socialPreflight = await h.app.request("/api/v1/social/posts", {
      method: "OPTIONS",
      headers: { Origin: "https://shop.example", "Access-Control-Request-Method": "POST" },
    });
    expect(socialPreflight.status).toBe(204);
    expect(socialPreflight.headers.get("access-control-allow-origin")).toBeNull();
    expect(socialPreflight.headers.get("allow")).toBe("GET, HEAD, POST");
  });

  it("origins are only for qr keys, and must be origins", async () => {
    const email = `pages2-${crypto.randomUUID().slice(0, 8)}@example.test`;
    await runAdminCommand(h.db, { command: "user:create", email });
    await expect(runAdminCommand(h.db, { command: "key:create", email, origins: "https://shop.example" })).rejects.toThrow(
      /--origins is only for a key made with --scopes qr/,
    );
    await expect(runAdminCommand(h.db, { command: "key:create", email, scopes: "qr", origins: "https://shop.example/menu" })).rejects.toThrow(
      /--origins: "https:\/\/shop.example\/menu" is not an origin/,
    );
    await expect(runAdminCommand(h.db, { command: "key:create", email, scopes: "qr", origins: "shop.example" })).rejects.toThrow(/is not an origin/);
    const list = (await runAdminCommand(h.db, { command: "key:list", email })).output;
    expect(list.split("\n")[0]).toBe("prefix\tname\tscopes\tpages\tcreated\tlast used\tstate");
  });
});

describe("making and listing scoped keys", () => {
  it("admin: key:create --scopes qr makes a qr key; key:list shows scopes; a wrong scope or a name with a line break is refused", async () => {
    const email = `scopes-${crypto.randomUUID().slice(0, 8)}@example.test`;
    const all = await runAdminCommand(h.db, { command: "user:create", email });
    await expect(runAdminCommand(h.db, { command: "key:create", email, name: "two\nlines" })).rejects.toThrow(/--name: .*line breaks/);
    const qr = await runAdminCommand(h.db, { command: "key:create", email, name: "shop page", scopes: "qr" });
    expect(qr.output).toMatch(/^sk_[0-9A-Za-z]{38}$/);
    expect((await h.app.request("/api/v1/social/accounts", { headers: h.auth(qr.output) })).status).toBe(403);
    expect((await h.app.request(`/api/qr-code/generate/${qr.output}/hi`)).status).toBe(200);
    expect((await h.app.request("/api/v1/social/accounts", { headers: h.auth(all.output) })).status).toBe(200);

    const two = await runAdminCommand(h.db, { command: "key:create", email, name: "studio", scopes: "photo, social" });
    expect((await h.app.request(`/api/qr-code/generate/${two.output}/hi`)).status).toBe(403);

    const list = (await runAdminCommand(h.db, { command: "key:list", email })).output.split("\n");
    expect(list[0]).toBe("prefix\tname\tscopes\tpages\tcreated\tlast used\tstate");
    expect(list.slice(1).map((l) => l.split("\t").slice(1, 3))).toEqual([
      ["default", "all"],
      ["shop page", "qr"],
      ["studio", "photo, social"],
    ]);
    await expect(runAdminCommand(h.db, { command: "key:create", email, scopes: "qr,billing" })).rejects.toThrow(
      /--scopes: unknown scope "billing"; choose from qr, photo, social or all/,
    );
    await expect(runAdminCommand(h.db, { command: "key:create", email, scopes: "" })).rejects.toThrow(/--scopes: no scope given/);
  });
});

describe("the hub's key form", () => {
  let t: HubTest;
  beforeAll(async () => {
    t = await createHubTest();
  });
  afterAll(() => t.h.close());

  it("makes a qr-only key, shows its scopes, and refuses 'only these' with none ticked", async () => {
    const b = t.browser();
    await b.signIn((await t.h.createUser()).userId);
    const made = await b.submit("/hub/keys", { name: "shop page", access: "some", scope_qr: "on" });
    expect(made.hops[0]?.status).toBe(303);
    const key = /sk_[0-9A-Za-z]{38}/.exec(made.html)![0];
    expect(made.html).toMatch(/It may call: <strong>qr<\/strong>/);
    expect((await t.h.app.request("/api/v1/social/accounts", { headers: t.h.auth(key) })).status).toBe(403);
    expect((await t.h.app.request(`/api/qr-code/generate/${key}/hi`)).status).toBe(200);

    const all = await b.submit("/hub/keys", { name: "server", access: "all" });
    expect(all.html).toMatch(/It may call: <strong>all<\/strong>/);

    const paged = await b.submit("/hub/keys", { name: "menu", access: "some", scope_qr: "on", origins: "https://shop.example" });
    expect(paged.hops[0]?.status).toBe(303);
    const pagedKey = /sk_[0-9A-Za-z]{38}/.exec(paged.html)![0];
    expect((await t.h.app.request(`/api/qr-code/generate/${pagedKey}/hi`, { headers: { Referer: "https://shop.example/" } })).status).toBe(200);
    expect((await t.h.app.request(`/api/qr-code/generate/${pagedKey}/hi`, { headers: { Referer: "https://evil.example/" } })).status).toBe(403);
    const wide = await b.submit("/hub/keys", { name: "wide", access: "all", origins: "https://shop.example" });
    expect(wide.html).toContain("only for a key for QR codes alone");
    expect(wide.html).not.toMatch(/sk_[0-9A-Za-z]{38}/);

    const none = await b.submit("/hub/keys", { name: "nothing", access: "some" });
    expect(none.html).toContain("Choose at least one area");
    expect(none.html).not.toMatch(/sk_[0-9A-Za-z]{38}/);

    const { html } = await b.page("/hub/keys");
    expect(html).toMatch(/data-label="Scopes">qr</);
    expect(html).toMatch(/data-label="Scopes">all</);
    expect(html).toMatch(/data-label="Pages">https:\/\/shop.example</);
  });
});
