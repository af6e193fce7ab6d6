/**
 * The in-process sandbox call (functions/node/sandbox-fetch.ts) hands the app the request an HTTP client would
 * have sent: a string body with its Content-Length in UTF-8 bytes, the caller's headers kept whether they came
 * in `init` or on a Request given as the input, every way of reading it working as on a web Request, the
 * caller's timeout honoured, the sandbox's Graph JSON answered as over HTTP, and any URL outside the sandbox
 * sent to the real fetch.
 */
import { describe, expect, it } from "vitest";
import { Hono } from "hono";
import type { AppEnv } from "../../src/http/env";
import { sandboxInProcess } from "../../functions/node/sandbox-fetch";
import { createSandboxApp } from "../../src/sandbox-app";
import type { Services } from "../../src/services";

const BASE = "http://127.0.0.1:8787/sandbox/";

function echoApp() {
  const app = new Hono<AppEnv>();
  app.all("/sandbox/*", async (c) => c.json({ headers: Object.fromEntries(c.req.raw.headers), body: await c.req.text(), method: c.req.method }));
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
    const declared = (await (await call(`${BASE}graph/x`, { method: "POST", body: "abc", headers: [["Content-Length", "3"]] })).json()) as {
      headers: Record<string, string>;
    };
    expect(declared.headers["content-length"]).toBe("3");
  });

  it("gives the app a Request whose every part reads as a web Request's would, the body as text, JSON, form or stream", async () => {
    const app = new Hono<AppEnv>();
    app.post("/sandbox/text", async (c) => c.json({ text: await c.req.text(), isRequest: c.req.raw instanceof Request, query: c.req.query("q") }));
    app.post("/sandbox/json", async (c) => c.json(await c.req.json()));
    app.post("/sandbox/form", async (c) => c.json(await c.req.parseBody()));
    app.post("/sandbox/stream", async (c) => c.json({ streamed: await new Response(c.req.raw.body).text(), bodyUsed: c.req.raw.bodyUsed }));
    app.get("/sandbox/get", async (c) => c.json({ method: c.req.method, text: await c.req.text(), bytes: (await c.req.arrayBuffer()).byteLength }));
    const call = sandboxInProcess(app, BASE, elsewhere);
    const post = (path: string, body: string, type: string) =>
      call(`${BASE}${path}`, { method: "post", body, headers: { "content-type": type } }).then((r) => r.json());

    expect(await post("text?q=1", "ünïcode", "text/plain")).toEqual({ text: "ünïcode", isRequest: true, query: "1" });
    expect(await post("json", '{"a":[1,2]}', "application/json")).toEqual({ a: [1, 2] });
    expect(await post("form", "a=1&b=two%20words", "application/x-www-form-urlencoded")).toEqual({ a: "1", b: "two words" });
    expect(await post("stream", "as a stream", "text/plain")).toEqual({ streamed: "as a stream", bodyUsed: true });
    expect(await (await call(`${BASE}get`)).json()).toEqual({ method: "GET", text: "", bytes: 0 });
    // Bad JSON rejects as a web Request's json() does; Hono answers it with its own error.
    const app2 = new Hono<AppEnv>();
    app2.post("/sandbox/bad", async (c) =>
      c.json({
        parsed: await c.req.json().then(
          () => "yes",
          (e: Error) => e.name,
        ),
      }),
    );
    expect(
      await (
        await sandboxInProcess(app2, BASE, elsewhere)(`${BASE}bad`, { method: "POST", body: "{", headers: { "content-type": "application/json" } })
      ).json(),
    ).toEqual({ parsed: "SyntaxError" });
  });

  it("rejects with the signal's reason when the call times out before the app answers", async () => {
    const app = new Hono<AppEnv>();
    app.post("/sandbox/slow", async (c) => {
      await new Promise((r) => setTimeout(r, 500));
      return c.json({});
    });
    const call = sandboxInProcess(app, BASE, elsewhere);
    const failure = await call(`${BASE}slow`, { method: "POST", body: "x", signal: AbortSignal.timeout(20) }).catch((e: Error) => e);
    expect((failure as Error).name).toBe("TimeoutError");
  });

  it("answers the sandbox's Graph JSON as the HTTP path does, a Response that reads as a web Response's would", async () => {
    const app = createSandboxApp({ config: { graph: { sandbox: true } } } as unknown as Services);
    const call = sandboxInProcess(app, BASE, elsewhere);
    // No such edge: Graph's unknown-object error, as JSON with its status.
    const url = `${BASE}graph/v23.0/1/2/3/4`;
    const [res, http] = [await call(url), await app.request(url)];
    expect(res).toBeInstanceOf(Response);
    expect([res.status, res.ok, res.headers.get("content-type")]).toEqual([http.status, http.ok, http.headers.get("content-type")]);
    expect(res.status).toBe(400);
    const withoutTrace = (body: { error: Record<string, unknown> }) => ({ ...body.error, fbtrace_id: typeof body.error.fbtrace_id });
    const httpBody = (await http.json()) as { error: Record<string, unknown> };
    expect(withoutTrace((await res.json()) as typeof httpBody)).toEqual(withoutTrace(httpBody));
    // Every other way of reading it goes through a web Response made from the same parts.
    const again = await call(url);
    const copy = again.clone();
    expect(JSON.parse(new TextDecoder().decode(await copy.arrayBuffer())).error.code).toBe(httpBody.error.code);
    expect(await new Response(again.body).json()).toMatchObject({ error: { code: httpBody.error.code } });
  });

  it("sends every other URL to the real fetch", async () => {
    const call = sandboxInProcess(echoApp(), BASE, elsewhere);
    expect(await (await call("https://graph.facebook.com/v23.0/me")).text()).toBe("fallback https://graph.facebook.com/v23.0/me");
  });
});
