/**
 * The least any Worker pays, measured beside ours: a Worker of a few lines (same compatibility date and
 * flags, run by Miniflare as ours is) that answers a small JSON, and the same Worker answering after one
 * subrequest (a POST to a loopback server whose small JSON answer it parses, as a database query over HTTP
 * does). The difference is what one round trip costs the runtime itself, before any code of ours runs; beside
 * our floor it is the lowest ratio an operation with one database round trip can reach.
 *
 * @example
 * await printBareWorker({ pids: ourPids, origin: edge.url }, edge.build.miniflareOptions, 3);
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Miniflare, type MiniflareOptions } from "miniflare";
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

function script(port: number): string {
  return `export default {
  async fetch(request) {
    if (new URL(request.url).pathname === "/query") {
      const res = await fetch("http://127.0.0.1:${port}/sql", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ query: "select id from social_accounts where user_id = $1", params: ["u"] }),
      });
      return Response.json({ data: await res.json() });
    }
    return Response.json({ data: { service: "bare" } });
  },
};`;
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
    script: script((server.address() as AddressInfo).port),
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
    for (let round = 0; round < rounds; round++) {
      floor.push(await cpuPerRequest(ours.pids, `${ours.origin}/`, N));
      plain.push(await cpuPerRequest(bare, `${origin}/`, N));
      query.push(await cpuPerRequest(bare, `${origin}/query`, N));
    }
    const trip = middle(query.map((q, i) => q - plain[i]!));
    const ourFloor = middle(floor);
    console.log(`\nA bare Worker beside ours (a few lines, same compatibility date and flags, through Miniflare as ours), ${rounds} round(s), median:`);
    console.log(`  GET / answering a small JSON                                  ${fmt(middle(plain))} ms  (ours, ${FLOOR}: ${fmt(ourFloor)} ms)`);
    console.log(`  the same after one subrequest (a POST, its JSON answer parsed) ${fmt(middle(query))} ms: the round trip costs the runtime ${fmt(trip)} ms`);
    console.log(
      `  so an operation with one database round trip costs at least ${fmt((ourFloor + trip) / ourFloor)}x our floor before any work of its own (key, rate limit, query, JSON)`,
    );
  } finally {
    await mf.dispose();
    server.close();
  }
}
