/**
 * The service's front door and its health: `GET /` names the service and links to everything a newcomer
 * looks for; `GET /health` probes each dependency (database, kv, queue, storage) and says which kind it is,
 * never where it is (no URL, host or key in the answer). Both are `createRoute`s, so they are in the API's
 * OpenAPI document like every area's operations.
 *
 * @example
 * app.openapi(serviceRoutes.frontDoor, (c) => c.json({ data: frontDoor() }, 200));
 * const { healthy, report } = await checkHealth(services); // 200 when healthy, else 503
 */
import { createRoute, z } from "@hono/zod-openapi";
import { sql } from "drizzle-orm";
import type { Services } from "../services";
import { internalError, json } from "./openapi";

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
      reference: "/docs",
      openApi: "/openapi.json",
      qrCode: "/api/qr-code/generate/{apiKey}/{text}",
    },
  };
}

type Check = { kind: string; status: "ok" | "error" | "not probed"; ms?: number; error?: "timed out" | "unreachable" };
type Checks = { database: Check; kv: Check; queue: Check; storage: Check };

const FrontDoorSchema = z
  .object({
    data: z.object({
      name: z.string(),
      version: z.string(),
      description: z.string(),
      links: z.record(z.string(), z.string()).openapi({ description: "Where to go next; a value with `{...}` is a path template, not a page." }),
    }),
  })
  .openapi("FrontDoor");

const CheckSchema = z.object({
  kind: z.string().openapi({ description: "Which twin serves the dependency, e.g. postgres or pglite, upstash or memory." }),
  status: z.enum(["ok", "error", "not probed"]),
  ms: z.number().optional(),
  error: z.enum(["timed out", "unreachable"]).optional(),
});

const HealthSchema = z
  .object({
    data: z.object({
      status: z.enum(["ok", "degraded"]),
      checks: z.object({ database: CheckSchema, kv: CheckSchema, queue: CheckSchema, storage: CheckSchema }),
    }),
  })
  .openapi("Health");

const healthy = {
  status: "ok",
  checks: {
    database: { kind: "postgres", status: "ok", ms: 3 },
    kv: { kind: "upstash", status: "ok", ms: 12 },
    queue: { kind: "qstash", status: "not probed" },
    storage: { kind: "s3", status: "ok", ms: 25 },
  },
} as const;

/** `GET /` and `GET /health` as `createRoute` definitions. Public; they take no input. */
export const serviceRoutes = {
  frontDoor: createRoute({
    method: "get",
    path: "/",
    operationId: "frontDoor",
    tags: ["Service"],
    summary: "Name, version and links",
    security: [],
    responses: {
      200: { description: "The service and where to go next.", content: json(FrontDoorSchema, { service: { value: { data: frontDoor() } } }) },
      500: internalError,
    },
  }),
  health: createRoute({
    method: "get",
    path: "/health",
    operationId: "health",
    tags: ["Service"],
    summary: "Health of each dependency",
    description:
      "Probes the database, the kv store and the storage (3 s each) and names the queue; says which kind each is, never where. `Cache-Control: no-store`.",
    security: [],
    responses: {
      200: { description: "Every dependency answered.", content: json(HealthSchema, { ok: { value: { data: healthy } } }) },
      503: {
        description: "A dependency failed; its check says `error` with `timed out` or `unreachable`.",
        content: json(HealthSchema, {
          degraded: {
            value: {
              data: { ...healthy, status: "degraded", checks: { ...healthy.checks, storage: { kind: "s3", status: "error", ms: 3001, error: "timed out" } } },
            },
          },
        }),
      },
      500: internalError,
    },
  }),
};

/**
 * Probes every dependency at once, each within PROBE_MS. The queue is probed only when it is the embedded
 * poller (in this process); QStash has no side-effect-free call to probe, so it is reported as configured.
 *
 * @example
 * const { healthy, report } = await checkHealth(services);
 */
export async function checkHealth(services: Services): Promise<{ healthy: boolean; report: { status: "ok" | "degraded"; checks: Checks } }> {
  const { config } = services;
  const [database, kv, storage] = await Promise.all([
    probe(config.databaseUrl ? "postgres" : "pglite", () => services.db.execute(sql`select 1`)),
    probe(config.upstash ? "upstash" : "memory", () => services.rateLimiter.limit("health", "probe", 1_000_000)),
    probe(config.s3 ? "s3" : "local", () => services.storage.get("health/probe")),
  ]);
  const queue: Check = services.queue.kind === "poller" ? { kind: "poller", status: "ok" } : { kind: "qstash", status: "not probed" };
  const checks: Checks = { database, kv, queue, storage };
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
