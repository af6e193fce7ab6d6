/**
 * The in-process sandbox call (functions/node/sandbox-fetch.ts) hands the app the request an HTTP client would
 * have sent: a string body with its Content-Length in UTF-8 bytes, the caller's headers kept whether they came
 * in `init` or on a Request given as the input, and any URL outside the sandbox sent to the real fetch.
 */
import { describe, expect, it } from "vitest";
import { Hono } from "hono";
import type { AppEnv } from "../../src/http/env";
import { sandboxInProcess } from "../../functions/node/sandbox-fetch";

const BASE = "http://127.0.0.1:8787/sandbox/";

function echoApp() {
  const app = new Hono<AppEnv>();
  app.all("/sandbox/*", async (c) =>
    c.json({ headers: Object.fromEntries(c.req.raw.headers), body: await c.req.text(), method: c.req.method }),
  );
  return app;
}

const elsewhere: typeof fetch = async (input) => new Response(`fallback ${input instanceof Request ? input.url : String(input)}`);

describe("sandboxInProcess", () => {
  it("declares a string body's length in UTF-8 bytes, as an HTTP client does", async () => {
    const call = sandboxInProcess(echoApp(), BASE, elsewhere);
    const body = "message=Diwali sale ₹499 ✓&access_token=t";
    const res = await call(`${BASE}graph/v23.0/1/feed`, { method: "POST", body, headers: { "content-type": "application/x-www-form-urlencoded" } });
    const seen = (await res.json()) as { headers: Record<string, string>; body: string };
    expect(seen.body).toBe(body);
    expect(seen.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
    expect(Number(seen.headers["content-length"])).toBeGreaterThan(body.length);
    expect(seen.headers["content-type"]).toBe("application/x-www-form-urlencoded");
  });

  it("keeps a Request input's headers when init brings a body and no headers, and a declared length as given", async () => {
    const call = sandboxInProcess(echoApp(), BASE, elsewhere);
    const input = new Request(`${BASE}graph/v23.0/me`, { headers: { authorization: "Bearer t", "content-type": "application/json" } });
    const seen = (await (await call(input, { method: "POST", body: "{}" })).json()) as { headers: Record<string, string>; method: string };
    expect(seen).toMatchObject({ method: "POST", headers: { authorization: "Bearer t", "content-type": "application/json", "content-length": "2" } });
    const declared = (await (await call(`${BASE}graph/x`, { method: "POST", body: "abc", headers: [["Content-Length", "3"]] })).json()) as { headers: Record<string, string> };
    expect(declared.headers["content-length"]).toBe("3");
  });

  it("sends every other URL to the real fetch", async () => {
    const call = sandboxInProcess(echoApp(), BASE, elsewhere);
    expect(await (await call("https://graph.facebook.com/v23.0/me")).text()).toBe("fallback https://graph.facebook.com/v23.0/me");
  });
});
