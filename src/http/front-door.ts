/**
 * The service's front door and its health: `GET /` names the service and links to everything a newcomer
 * looks for; `GET /health` probes each dependency (database, kv, queue, storage) and says which kind it is,
 * never where it is (no URL, host or key in the answer).
 *
 * @example
 * app.get("/", (c) => c.json({ data: frontDoor() }));
 * const { healthy, report } = await checkHealth(services); // 200 when healthy, else 503
 */
import { sql } from "drizzle-orm";
import type { Services } from "../services";

/** The service's name and version (package.json's; a test keeps them equal). */
export const SERVICE = { name: "shopkit-api", version: "0.1.0" } as const;

/** How long one dependency may take to answer the health probe. */
const PROBE_MS = 3_000;

/**
 * What `GET /` answers.
 *
 * @example
 * frontDoor().links.health; // "/health"
 */
export function frontDoor() {
  return {
    ...SERVICE,
    description: "QR codes, product photography and social publishing for shops, over HTTP.",
    links: {
      health: "/health",
      hub: "/hub",
      socialReference: "/api/v1/social/docs",
      socialOpenApi: "/api/v1/social/openapi.json",
      photoOpenApi: "/api/image/openapi.json",
      qrCode: "/api/qr-code/generate/{apiKey}/{text}",
    },
  };
}

type Check = { kind: string; status: "ok" | "error" | "not probed"; ms?: number; error?: string };

/**
 * Probes every dependency at once, each within PROBE_MS. The queue is probed only when it is the embedded
 * poller (in this process); QStash has no side-effect-free call to probe, so it is reported as configured.
 *
 * @example
 * const { healthy, report } = await checkHealth(services);
 */
export async function checkHealth(services: Services): Promise<{ healthy: boolean; report: { status: "ok" | "degraded"; checks: Record<string, Check> } }> {
  const { config } = services;
  const [database, kv, storage] = await Promise.all([
    probe(config.databaseUrl ? "postgres" : "pglite", () => services.db.execute(sql`select 1`)),
    probe(config.upstash ? "upstash" : "memory", () => services.rateLimiter.limit("health", "probe", 1_000_000)),
    probe(config.s3 ? "s3" : "local", () => services.storage.get("health/probe")),
  ]);
  const queue: Check = services.queue.kind === "poller" ? { kind: "poller", status: "ok" } : { kind: "qstash", status: "not probed" };
  const checks = { database, kv, queue, storage };
  const healthy = Object.values(checks).every((c) => c.status !== "error");
  return { healthy, report: { status: healthy ? "ok" : "degraded", checks } };
}

async function probe(kind: string, call: () => Promise<unknown>): Promise<Check> {
  const started = Date.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([call(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("timed out")), PROBE_MS)))]);
    return { kind, status: "ok", ms: Date.now() - started };
  } catch (err) {
    // The kind of failure only: driver messages may carry hosts or user names.
    return { kind, status: "error", ms: Date.now() - started, error: err instanceof Error && err.message === "timed out" ? "timed out" : "unreachable" };
  } finally {
    clearTimeout(timer);
  }
}
