/**
 * QR generation through the whole stack: `GET /api/qr-code/generate/{key}/{url}` against `npm start` on the
 * embedded default (PGlite) and on the machine's PostgreSQL, rate limits raised to 1,000,000, beside the
 * peer (bench/peers/qr-server.ts: `node:http` + npm `qrcode` `toBuffer`, QuickChart's approach), each in its
 * own process, taking turns with the same client (16 undici connections) and the same URLs. Every slice's
 * sample PNG must read back as its URL. Goals: 10x the peer on PGlite, 12x on PostgreSQL. Then the same by
 * `POST /api/qr-code/generate {type:"url"}` (a data URL in JSON; the peer answers `toDataURL`), goal 10x.
 *
 * Run alone: `npx tsx bench/qr-http.ts`; or with the others: `npm run bench -- qr-http`.
 */
import { pathToFileURL } from "node:url";
import { createScratchDatabase } from "../dev/postgres";
import { startServerProcess } from "../test/helpers/server-process";
import { printQrThroughput, type Target } from "./qr-load";
import { benchResources } from "./resources";

const LIMITS = { RATE_LIMIT_QR: "1000000", LOG_LEVEL: "info" };

/** Prints the figures; timings are never assertions. */
export async function benchQrHttp(): Promise<void> {
  const res = benchResources();
  try {
    const scratch = await res.own(
      () => createScratchDatabase(),
      (s) => s.drop(),
    );
    const pglite = await res.own(
      () => startServerProcess({ env: LIMITS }),
      (s) => s.dispose(),
    );
    const postgres = await res.own(
      () => startServerProcess({ env: { ...LIMITS, DATABASE_URL: scratch.url } }),
      (s) => s.dispose(),
    );
    const peer = await res.own(
      () => startServerProcess({ entry: "bench/peers/qr-server.ts" }),
      (s) => s.dispose(),
    );
    const target = (name: string, server: typeof pglite): Target => ({
      name,
      origin: server.baseUrl,
      key: server.apiKey,
      log: () => server.output().split("\n").slice(-20).join("\n"),
    });
    const targets = [
      target("ours: npm start, embedded default (PGlite)", pglite),
      target("ours: npm start on PostgreSQL (node-postgres)", postgres),
      target("peer: node:http + npm qrcode", peer),
    ];
    await printQrThroughput(targets, res, [
      [0, 2, "ours (PGlite) / peer, goal >= 10x"],
      [1, 2, "ours (PostgreSQL) / peer, goal >= 12x"],
    ]);
    await printQrThroughput(targets, res, [[0, 2, "ours (PGlite) / peer, goal >= 10x"]], "post");
  } finally {
    await res.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchQrHttp();
}
