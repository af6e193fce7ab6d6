/**
 * The least any Worker pays, measured beside ours: a Worker of a few lines (same compatibility date and
 * flags, run by Miniflare as ours is) that answers a small JSON, the same Worker answering after one
 * subrequest (a POST to a loopback server whose small JSON answer it parses, as a database query over HTTP
 * does), and after the same query through Neon's driver (`neon()` of @neondatabase/serverless, which ours
 * uses, the loopback server answering as Neon's HTTP endpoint does). The second difference is what one round
 * trip costs the runtime itself, the third what the driver adds to it, before any code of ours runs; beside
 * our floor they give the lowest ratio an operation with one database query can reach.
 *
 * @example
 * await printBareWorker({ pids: ourPids, origin: edge.url }, edge.build.miniflareOptions, 3);
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { build } from "esbuild";
import { Miniflare, type MiniflareOptions } from "miniflare";
import { ROOT } from "../dev/edge-worker";
import { cpuPerRequest, FLOOR } from "./edge-routes";
import { workerdPids } from "./proc-cpu";
import { middle } from "./timing";

const N = 100;
/** The shape and size of a one-row answer of Neon's HTTP query endpoint. */
const ANSWER = JSON.stringify({
  command: "SELECT",
  rowCount: 1,
  rowAsArray: true,
  fields: [{ name: "id", dataTypeID: 25 }],
  rows: [["pageplatform:1001"]],
});

/** The bare Worker's source: `/` a small JSON, `/query` after a plain POST, `/neon` after the query through Neon's driver. */
function source(port: number): string {
  return `import { neon, neonConfig } from "@neondatabase/serverless";
neonConfig.fetchEndpoint = "http://127.0.0.1:${port}/sql";
const sql = neon("postgres://bench:bench@127.0.0.1:${port}/bench");
export default {
  async fetch(request) {
    const path = new URL(request.url).pathname;
    if (path === "/query") {
      const res = await fetch("http://127.0.0.1:${port}/sql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "select id from social_accounts where user_id = $1", params: ["u"] }),
      });
      return Response.json({ data: await res.json() });
    }
    if (path === "/neon") return Response.json({ data: await sql.query("select id from social_accounts where user_id = $1", ["u"]) });
    return Response.json({ data: { service: "bare" } });
  },
};`;
}

/** The bare Worker bundled as wrangler would (the driver's browser build; no Node built-ins). */
async function bundle(port: number): Promise<string> {
  const out = await build({
    stdin: { contents: source(port), resolveDir: ROOT, loader: "js" },
    bundle: true,
    format: "esm",
    platform: "browser",
    conditions: ["workerd", "worker", "browser"],
    write: false,
    logLevel: "silent",
  });
  return out.outputFiles[0]!.text;
}

const fmt = (n: number, digits = 2) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** Prints the bare Worker's two figures beside our floor, each round measuring all three in turn. */
export async function printBareWorker(
  ours: { origin: string; pids: readonly string[] },
  options: Pick<MiniflareOptions, "compatibilityDate" | "compatibilityFlags">,
  rounds: number,
): Promise<void> {
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end(ANSWER));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const before = new Set(await workerdPids());
  const mf = new Miniflare({
    modules: true,
    script: await bundle((server.address() as AddressInfo).port),
    compatibilityDate: options.compatibilityDate,
    compatibilityFlags: options.compatibilityFlags,
    stripCfConnectingIp: false,
  });
  try {
    const origin = (await mf.ready).origin;
    const bare = (await workerdPids()).filter((pid) => !before.has(pid));
    const floor: number[] = [];
    const plain: number[] = [];
    const query: number[] = [];
    const driver: number[] = [];
    for (let round = 0; round < rounds; round++) {
      floor.push(await cpuPerRequest(ours.pids, `${ours.origin}/`, N));
      plain.push(await cpuPerRequest(bare, `${origin}/`, N));
      query.push(await cpuPerRequest(bare, `${origin}/query`, N));
      driver.push(await cpuPerRequest(bare, `${origin}/neon`, N));
    }
    const trip = middle(query.map((q, i) => q - plain[i]!));
    const neonQuery = middle(driver.map((q, i) => q - plain[i]!));
    const ourFloor = middle(floor);
    console.log(`\nA bare Worker beside ours (a few lines, same compatibility date and flags, through Miniflare as ours), ${rounds} round(s), median:`);
    console.log(`  GET / answering a small JSON                                  ${fmt(middle(plain))} ms  (ours, ${FLOOR}: ${fmt(ourFloor)} ms)`);
    console.log(`  the same after one subrequest (a POST, its JSON answer parsed) ${fmt(middle(query))} ms: the round trip costs the runtime ${fmt(trip)} ms`);
    console.log(
      `  the same query through Neon's driver (neon(), as ours)         ${fmt(middle(driver))} ms: the driver adds ${fmt(neonQuery - trip)} ms to the round trip`,
    );
    console.log(
      `  so an operation with one database round trip costs at least ${fmt((ourFloor + trip) / ourFloor)}x our floor before any work of its own (key, rate limit, query, JSON),`,
    );
    console.log(`  and ${fmt((ourFloor + neonQuery) / ourFloor)}x with the query through Neon's driver`);
  } finally {
    await mf.dispose();
    server.close();
  }
}
