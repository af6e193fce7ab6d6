/**
 * Every failure class as the adapters meet it over HTTP: real Graph error bodies -> auth / rate_limit /
 * transient / invalid; and the network failures that decide between "retry" and "ambiguous".
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createServer } from "node:net";
import { GRAPH_ERROR_BODIES, startGraphFake, type GraphFake } from "../../helpers/graph-fake";
import { pagePlatform } from "../../../src/social/platforms/pageplatform";
import { photoPlatform } from "../../../src/social/platforms/photoplatform";
import { PlatformError, classifyGraphError, retryHintMs } from "../../../src/social/platforms/errors";
import { testContext } from "./adapter-context";

let fake: GraphFake;
beforeAll(async () => (fake = await startGraphFake()));
afterAll(() => fake.close());
beforeEach(() => fake.reset());

const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as PlatformError,
  );

describe("Graph error bodies", () => {
  for (const [kind, cases] of Object.entries(GRAPH_ERROR_BODIES)) {
    for (const c of cases) {
      it(`${c.name} -> ${kind} (pageplatform feed post)`, async () => {
        fake.on("POST", /\/feed$/, () => ({ status: c.status, body: c.body }));
        const err = await failure(pagePlatform.publish(testContext(fake.baseUrl)));
        expect(err).toBeInstanceOf(PlatformError);
        expect(err!.kind).toBe(kind);
        const error = (c.body as { error: { code: number; fbtrace_id: string } }).error;
        expect(err!.details.code).toBe(error.code);
        // The message keeps code, subcode and fbtrace_id for support.
        expect(err!.message).toContain(`code ${error.code}`);
        expect(err!.message).toContain(error.fbtrace_id);
      });
    }
  }

  it("photoplatform media_publish errors are classified the same way", async () => {
    fake.on("GET", /\/C1$/, () => ({ status: 200, body: { status_code: "FINISHED" } }));
    fake.on("GET", /content_publishing_limit$/, () => ({ status: 200, body: { data: [{ quota_usage: 0, config: { quota_total: 50 } }] } }));
    const ctx = () => testContext(fake.baseUrl, { imageUrls: ["https://img.test/p.jpg"], containerId: "C1" });
    for (const kind of ["auth", "rate_limit", "transient", "invalid"] as const) {
      const c = GRAPH_ERROR_BODIES[kind][0]!;
      fake.once("POST", /media_publish$/, () => ({ status: c.status, body: c.body }));
      expect((await failure(photoPlatform.publish(ctx())))!.kind).toBe(kind);
    }
  });

  it("bodies without a Graph error fall back on the HTTP status", () => {
    expect(classifyGraphError(401, undefined)).toBe("auth");
    expect(classifyGraphError(429, undefined)).toBe("rate_limit");
    expect(classifyGraphError(503, undefined)).toBe("transient");
    expect(classifyGraphError(400, undefined)).toBe("invalid");
  });

  it("reads the platform's wait hint from Retry-After or the Business-Use-Case header", () => {
    expect(retryHintMs(new Headers({ "retry-after": "120" }))).toBe(120_000);
    const buc = JSON.stringify({ "1000": [{ type: "pages", call_count: 100, estimated_time_to_regain_access: 7 }] });
    expect(retryHintMs(new Headers({ "x-business-use-case-usage": buc }))).toBe(7 * 60_000);
    expect(retryHintMs(new Headers())).toBeUndefined();
  });
});

describe("network failures", () => {
  it("no answer to the publishing call (timeout) is ambiguous", async () => {
    fake.on("POST", /\/feed$/, () => ({ fault: "hang" }));
    const err = await failure(
      pagePlatform.publish(testContext(fake.baseUrl, { graph: { baseUrl: fake.baseUrl, version: "v23.0", fetch, token: "t", timeoutMs: 300 } })),
    );
    expect(err!.kind).toBe("ambiguous");
    expect(err!.message).toMatch(/timed out/);
  });

  it("a connection cut after the request, before or after the headers, is ambiguous on a publish", async () => {
    fake.once("POST", /\/feed$/, () => ({ fault: "destroy" }));
    expect((await failure(pagePlatform.publish(testContext(fake.baseUrl))))!.kind).toBe("ambiguous");
    fake.once("POST", /\/feed$/, () => ({ fault: "cut-after-headers" }));
    expect((await failure(pagePlatform.publish(testContext(fake.baseUrl))))!.kind).toBe("ambiguous");
  });

  it("a gateway 5xx or an unreadable 200 is ambiguous on a publish; a 5xx is transient on a read", async () => {
    fake.on("POST", /\/feed$/, () => ({ status: 502, body: "<html>Bad gateway</html>" }));
    expect((await failure(pagePlatform.publish(testContext(fake.baseUrl))))!.kind).toBe("ambiguous");
    fake.once("POST", /\/feed$/, () => ({ status: 200, body: "<html>ok</html>" }));
    expect((await failure(pagePlatform.publish(testContext(fake.baseUrl))))!.kind).toBe("ambiguous");
    fake.on("GET", /\/feed$/, () => ({ status: 502, body: "<html>Bad gateway</html>" }));
    expect((await failure(pagePlatform.reconcile(testContext(fake.baseUrl))))!.kind).toBe("transient");
  });

  it("the same failures on invisible steps (unpublished photo, container) are transient: nothing can have been posted", async () => {
    fake.on("POST", /\/photos$/, () => ({ fault: "destroy" }));
    const page = testContext(fake.baseUrl, { imageUrls: ["https://a.test/1.jpg", "https://a.test/2.jpg"] });
    expect((await failure(pagePlatform.publish(page)))!.kind).toBe("transient");
    expect(page.events).toEqual([]);
    fake.on("POST", /\/media$/, () => ({ fault: "destroy" }));
    expect((await failure(photoPlatform.publish(testContext(fake.baseUrl, { imageUrls: ["https://a.test/1.jpg"] }))))!.kind).toBe("transient");
  });

  it("a refused connection never sent anything: transient, even for a publish", async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const err = await failure(pagePlatform.publish(testContext(`http://127.0.0.1:${port}`)));
    expect(err!.kind).toBe("transient");
    expect(err!.message).toMatch(/ECONNREFUSED/);
  });
});
