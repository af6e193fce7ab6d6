/**
 * The safe fetchers (edge and Node twins) against a corpus of bad URLs (private and encoded addresses,
 * reserved names, redirects, wrong schemes and ports) and a
 * loopback HTTPS image server reached only through the test allowance. Loopback listeners count every
 * connection: refused URLs must leave them at zero.
 */
import type { LookupAddress } from "node:dns";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createNodeFetcher, type NodeFetcher } from "../../functions/node/safe-fetch";
import { createEdgeFetcher } from "../../src/adapters/fetch/edge";
import { ApiError } from "../../src/http/errors";
import type { SafeFetcher } from "../../src/services";
import { startHitCounter, startImageServer, type HitCounter, type ImageServer } from "../helpers/image-server";
import { haveSystemTool } from "../helpers/system-tools";
import { makePng } from "../helpers/images";

let counter: HitCounter;
let server: ImageServer;
let png: Buffer;

// The loopback HTTPS image server's certificate is made by openssl: without it every case is skipped.
const haveOpenssl = haveSystemTool("images/safe-fetch", "openssl");
beforeEach(({ skip }) => skip(!haveOpenssl));

beforeAll(async () => {
  if (!haveOpenssl) return;
  counter = await startHitCounter([
    { host: "127.0.0.1", port: 443 },
    { host: "127.0.0.1", port: 80 },
    { host: "::1", port: 443 },
  ]);
  server = await startImageServer();
  png = await makePng(40, 30);
  server.route("/image.png", (_req, res) => res.writeHead(200, { "content-type": "image/png", "set-cookie": "a=b" }).end(png));
  server.route("/octet", (_req, res) => res.writeHead(200, { "content-type": "application/octet-stream" }).end(png));
});

afterAll(async () => {
  await server?.close();
  await counter?.close();
});

const counterPort = () => counter.bound.find((b) => b.host === "127.0.0.1" && b.port !== 443 && b.port !== 80)!.port;

/** Every URL here must be refused before any I/O, by both twins. */
function corpus(): Array<[string, RegExp]> {
  const p = counterPort();
  return [
    ["http://example.com/a.jpg", /must use https/],
    ["ftp://example.com/a.jpg", /must use https/],
    ["file:///etc/passwd", /must use https/],
    ["data:image/png;base64,iVBORw0KGgo=", /data: URI is not an image URL/],
    ["gopher://127.0.0.1:6379/_", /must use https/],
    ["https://example.com:8443/a.jpg", /Port 8443 is not allowed; images must be served on port 443/],
    [`https://127.0.0.1:${p}/a.jpg`, new RegExp(`Port ${p} is not allowed`)],
    [`http://127.0.0.1:${p}/a.jpg`, /must use https/],
    ["https://user:s3cr3t@example.com/a.jpg?token=t0k3n", /must not contain credentials/],
    ["https://example.com@127.0.0.1/a.jpg", /must not contain credentials/],
    ["https://127.0.0.1/a.jpg", /loopback address/],
    ["https://localhost/a.jpg", /local or internal name/],
    ["https://localhost./a.jpg", /local or internal name/],
    ["https://images.localhost/a.jpg", /local or internal name/],
    ["https://0.0.0.0/", /unspecified address/],
    ["https://0/", /unspecified address/],
    ["https://[::]/", /unspecified address/],
    ["https://[::1]/", /loopback address/],
    ["https://2130706433/", /loopback address/],
    ["https://0x7f000001/", /loopback address/],
    ["https://0177.0.0.1/", /loopback address/],
    ["https://017700000001/", /loopback address/],
    ["https://127.1/", /loopback address/],
    ["https://0x7f.1/", /loopback address/],
    ["https://[::ffff:127.0.0.1]/", /loopback address/],
    ["https://[0:0:0:0:0:ffff:a9fe:a9fe]/", /link-local/],
    ["https://[::ffff:a9fe:a9fe]/", /link-local/],
    ["https://169.254.169.254/latest/meta-data/", /link-local/],
    ["https://10.0.0.1/", /private network/],
    ["https://172.16.0.1/", /private network/],
    ["https://192.168.1.1/", /private network/],
    ["https://100.64.0.1/", /carrier-grade NAT/],
    ["https://[fd00::1]/", /private network/],
    ["https://[fe80::1]/", /link-local/],
    ["https://[::7f00:1]/", /IPv4-compatible/],
    ["https://[64:ff9b::7f00:1]/", /NAT64/],
    ["https://[2002:7f00:1::]/", /6to4/],
    ["https://①②⑦.0.0.1/", /loopback address/],
    ["https://127。0。0。1/", /loopback address/],
    ["https://224.0.0.1/", /multicast/],
    ["https://255.255.255.255/", /broadcast/],
    ["https://198.18.0.1/", /reserved|not a public/],
    ["https://metadata.google.internal/", /local or internal name \(\.internal\)/],
    ["https://printer.local/", /local or internal name/],
    ["https://nas/", /single-label/],
    ["https://127.0.0.1.nip.io/", /nip\.io/],
    ["https:/\\127.0.0.1/", /loopback address/],
    ["https:127.0.0.1", /loopback address/],
    [`https://example.com/${"a".repeat(2100)}`, /at most 2048/],
    ["https://example.com/a b.jpg", /spaces, line breaks/],
    ["https://example.com/a.jpg\r\nX-Injected: 1", /spaces, line breaks/],
    ["https://[fe80::1%25eth0]/", /not a valid absolute URL/],
    ["https://256.0.0.1/", /not a valid absolute URL/],
    // The allowance is per origin: the same host on another port gets the normal rules.
    [`https://127.0.0.1:${p + 1 === server.port ? p + 2 : p + 1}/image.png`, /is not allowed; images must be served on port 443/],
  ];
}

interface Twin {
  name: string;
  fetcher: SafeFetcher;
  /** How many times the twin touched the network layer (fetch calls or DNS lookups). */
  io(): number;
  close(): Promise<void>;
}

function twins(): Twin[] {
  let edgeCalls = 0;
  let lookups = 0;
  const edge = createEdgeFetcher({
    fetch: (url, init) => {
      edgeCalls++;
      return server.fetch(url, init);
    },
    testAllow: { origins: [server.origin] },
  });
  const node: NodeFetcher = createNodeFetcher({
    testAllow: { origins: [server.origin], ca: server.ca },
    resolve: async () => {
      lookups++;
      return [{ address: "127.0.0.1", family: 4 }];
    },
  });
  return [
    { name: "edge", fetcher: edge, io: () => edgeCalls, close: async () => undefined },
    { name: "node", fetcher: node, io: () => lookups, close: () => node.close() },
  ];
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
  throw new Error("expected the fetch to be refused");
}

describe.each(["edge", "node"])("%s fetcher: bad-URL corpus", (which) => {
  it("refuses every URL with 422 INVALID_IMAGE_URL before any I/O, and nothing reaches a loopback listener", async () => {
    const twin = twins().find((t) => t.name === which)!;
    const urls = corpus();
    // Port 443/80 listeners need root and a free port; when bound, a leak to the default port would count.
    expect(counter.bound.length).toBeGreaterThanOrEqual(1);
    expect(urls.length).toBeGreaterThanOrEqual(30);
    const before = counter.hits();
    for (const [url, message] of urls) {
      const err = await refusal(twin.fetcher.fetchBytes(url));
      expect(err.code, url).toBe("INVALID_IMAGE_URL");
      expect(err.status).toBe(422);
      expect(err.message, url).toMatch(message);
      expect(err.message).not.toMatch(/s3cr3t|t0k3n/);
    }
    expect(twin.io()).toBe(0);
    expect(counter.hits() - before).toBe(0);
    await twin.close();
  });
});

describe.each(["edge", "node"])("%s fetcher: the loopback test server through the allowance", (which) => {
  let twin: Twin;
  beforeAll(() => {
    twin = twins().find((t) => t.name === which)!;
  });
  afterAll(() => twin.close());

  it("fetches an image, sending no cookies or credentials", async () => {
    const { bytes, contentType } = await twin.fetcher.fetchBytes(server.url("/image.png"));
    expect(Buffer.from(bytes).equals(png)).toBe(true);
    expect(contentType).toBe("image/png");
    expect((await twin.fetcher.fetchBytes(server.url("/octet"))).bytes.length).toBe(png.length);
    const sent = server.requests.filter((r) => r.path === "/image.png").at(-1)!;
    expect(sent.headers.cookie).toBeUndefined();
    expect(sent.headers.authorization).toBeUndefined();
  });

  it("does not follow a redirect to a private address (the target sees no request)", async () => {
    const before = counter.hits();
    for (const to of [`http://127.0.0.1:${counterPort()}/x`, "https://127.0.0.1/x", "https://169.254.169.254/", server.url("/image.png")]) {
      for (const status of [301, 302, 303, 307, 308]) {
        const err = await refusal(twin.fetcher.fetchBytes(server.url(`/redirect?status=${status}&to=${encodeURIComponent(to)}`)));
        expect(err.code).toBe("INVALID_IMAGE_URL");
        expect(err.message).toMatch(new RegExp(`redirect \\(HTTP ${status}\\); redirects are not followed`));
      }
    }
    expect(counter.hits() - before).toBe(0);
  });

  it("refuses non-2xx answers and non-image content types with 422", async () => {
    expect((await refusal(twin.fetcher.fetchBytes(server.url("/status/404")))).message).toMatch(/answered HTTP 404/);
    expect((await refusal(twin.fetcher.fetchBytes(server.url("/status/500")))).message).toMatch(/answered HTTP 500/);
    expect((await refusal(twin.fetcher.fetchBytes(server.url("/html")))).message).toMatch(/content type text\/html, not an image/);
  });

  it("caps the size: a Content-Length over 10 MB and a chunked stream past 10 MB both give 413", async () => {
    for (const path of ["/big?bytes=11000000", "/stream?bytes=11000000"]) {
      const err = await refusal(twin.fetcher.fetchBytes(server.url(path)));
      expect(err.code).toBe("PAYLOAD_TOO_LARGE");
      expect(err.status).toBe(413);
    }
    const exact = await twin.fetcher.fetchBytes(server.url(`/stream?bytes=${10 * 1024 * 1024}`));
    expect(exact.bytes.length).toBe(10 * 1024 * 1024);
    const small = await refusal(twin.fetcher.fetchBytes(server.url("/stream?bytes=5000"), { maxBytes: 4096 }));
    expect(small.message).toMatch(/larger than 4096 bytes/);
  });

  it("times out a slow drip with a bounded total time", async () => {
    const started = Date.now();
    const err = await refusal(twin.fetcher.fetchBytes(server.url("/slow"), { timeoutMs: 600 }));
    expect(err.code).toBe("INVALID_IMAGE_URL");
    expect(err.message).toMatch(/did not deliver the image within 600 ms/);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe("the hit counter", () => {
  it("does notice a connection to the default port (so zero hits above means something)", async () => {
    const on443 = counter.bound.some((b) => b.host === "127.0.0.1" && b.port === 443);
    const target = on443 ? "https://127.0.0.1" : `https://127.0.0.1:${counterPort()}`;
    const leaky = createNodeFetcher({ testAllow: { origins: [target] } });
    const before = counter.hits();
    await refusal(leaky.fetchBytes(`${target}/a.png`));
    expect(counter.hits() - before).toBe(1);
    await leaky.close();
  });
});

describe("node fetcher: every resolved address is checked at connect time", () => {
  const cases: Array<[string, LookupAddress[], RegExp]> = [
    ["loopback", [{ address: "127.0.0.1", family: 4 }], /resolves to a loopback address/],
    [
      "one private among public ones",
      [
        { address: "93.184.215.14", family: 4 },
        { address: "10.1.2.3", family: 4 },
      ],
      /resolves to a private network address/,
    ],
    ["IPv6 loopback", [{ address: "::1", family: 6 }], /loopback/],
    ["mapped metadata address", [{ address: "::ffff:169.254.169.254", family: 6 }], /link-local/],
    ["IPv4-compatible loopback", [{ address: "::7f00:1", family: 6 }], /IPv4-compatible/],
    ["CGNAT", [{ address: "100.100.100.200", family: 4 }], /carrier-grade NAT/],
    ["unspecified", [{ address: "0.0.0.0", family: 4 }], /unspecified/],
  ];
  it.each(cases)("a name resolving to %s is refused without connecting", async (_name, answers, message) => {
    const before = counter.hits();
    const asked: string[] = [];
    const fetcher = createNodeFetcher({
      resolve: async (hostname) => {
        asked.push(hostname);
        return answers;
      },
    });
    try {
      const err = await refusal(fetcher.fetchBytes("https://images.rebind-test.example.org/a.png"));
      expect(err.code).toBe("INVALID_IMAGE_URL");
      expect(err.message).toMatch(message);
      expect(asked).toContain("images.rebind-test.example.org");
      expect(counter.hits() - before).toBe(0);
    } finally {
      await fetcher.close();
    }
  });

  it("an unresolvable name gives a clear 422", async () => {
    const fetcher = createNodeFetcher({ resolve: async () => Promise.reject(Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" })) });
    const err = await refusal(fetcher.fetchBytes("https://no-such-host.example.org/a.png"));
    expect(err.message).toMatch(/host name could not be resolved/);
    await fetcher.close();
  });

  it("the allowance also works by name through the real resolver (https://localhost:<port>)", async () => {
    const named = await startImageServer({ host: "localhost" });
    named.route("/image.png", (_req, res) => res.writeHead(200, { "content-type": "image/png" }).end(png));
    const fetcher = createNodeFetcher({ testAllow: { origins: [named.origin], ca: named.ca } });
    try {
      expect((await fetcher.fetchBytes(named.url("/image.png"))).bytes.length).toBe(png.length);
      // Same name, default port: not the allowed origin, so the normal rules apply.
      expect((await refusal(fetcher.fetchBytes("https://localhost/image.png"))).message).toMatch(/local or internal name/);
    } finally {
      await fetcher.close();
      await named.close();
    }
  });

  it("without the allowance the test server is refused (self-signed and loopback)", async () => {
    const fetcher = createNodeFetcher();
    const err = await refusal(fetcher.fetchBytes(server.url("/image.png")));
    expect(err.message).toMatch(/is not allowed; images must be served on port 443/);
    await fetcher.close();
  });
});
