/**
 * Credits in the Worker as deployed (workerd, the Neon driver through the bridge to a scratch PostgreSQL):
 * 50 concurrent photo requests against a balance worth 10 images make exactly 10 images and 40 x 402, and
 * the balance ends at 0 with the ledger summing to it; the gallery holds the 10 images.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openNodeDb } from "../../db/node";
import type { DbHandle } from "../../db/client";
import { createApiKey, createUser } from "../../src/http/api-keys";
import { runAdminCommand } from "../../functions/node/admin-commands";
import { parseConfig } from "../../src/config";
import { startLocalEdge, type LocalEdge } from "../../dev/edge-worker";
import { checkDispatchConformance } from "../helpers/conformance";
import { createScratchDatabase, type ScratchDatabase } from "../../dev/postgres";
import { productJpeg } from "../photo/fixtures";

const ORIGIN = "http://api.test";
type Json = Record<string, any>;

let edge: LocalEdge;
let scratch: ScratchDatabase;
let handle: DbHandle;

beforeAll(async () => {
  scratch = await createScratchDatabase();
  handle = await openNodeDb({ url: scratch.url, poolSize: 2 });
  edge = await startLocalEdge({
    databaseUrl: scratch.url,
    vars: { LOG_LEVEL: "warn", PUBLIC_BASE_URL: "https://api.example.test", PHOTO_SIGNUP_CREDITS: "0", RATE_LIMIT_PHOTO: "1000", HEAVY_QUEUE_PER_USER: "100" },
  });
  checkDispatchConformance(edge.mf);
}, 180_000);

afterAll(async () => {
  const steps: Array<() => unknown> = [() => edge?.dispose(), () => handle?.close(), () => scratch?.drop()];
  for (const step of steps)
    await Promise.resolve()
      .then(() => step())
      .catch(() => {});
});

describe("credits in workerd", () => {
  it("50 concurrent requests against a balance worth 10 images: exactly 10 images, 40 x 402; the balance ends at 0 and the ledger sums to it", async () => {
    const email = `credits-${crypto.randomUUID()}@example.test`;
    const { userId } = await createUser(handle.db, email);
    const { key } = await createApiKey(handle.db, userId);
    // The CLI opens the account with the deployment's sign-up grant (none here), then adds 40.
    const deployment = { config: parseConfig({ PHOTO_SIGNUP_CREDITS: "0" }), clock: { now: () => new Date() } };
    await runAdminCommand(handle.db, { command: "credits", email, add: "40", note: "workerd test" }, deployment);
    const auth = { Authorization: `Bearer ${key}` };
    const product = `data:image/jpeg;base64,${(await productJpeg(240, 320)).toString("base64")}`;
    const body = JSON.stringify({ productImages: [{ dataUrl: product }], promptId: "studio-white-sweep", model: "standard", outputResult: "url" });

    const answers = await Promise.all(
      Array.from({ length: 50 }, async () => {
        const res = await edge.mf.dispatchFetch(`${ORIGIN}/api/image/product-photography`, {
          method: "POST",
          headers: { ...auth, "Content-Type": "application/json" },
          body,
        });
        return { status: res.status, body: (await res.json()) as Json };
      }),
    );
    const statuses = answers.map((a) => a.status);
    expect(
      statuses.filter((s) => s === 200),
      JSON.stringify(answers.find((a) => a.status !== 200 && a.status !== 402)?.body ?? {}),
    ).toHaveLength(10);
    expect(statuses.filter((s) => s === 402)).toHaveLength(40);
    expect(answers.filter((a) => a.status === 402).every((a) => a.body.error.code === "INSUFFICIENT_CREDITS")).toBe(true);

    const credits = (await (await edge.mf.dispatchFetch(`${ORIGIN}/api/image/credits?limit=100`, { headers: auth })).json()) as Json;
    expect([credits.data.balance, credits.data.reserved, credits.data.available]).toEqual([0, 0, 0]);
    const movements = credits.data.movements.items as Json[];
    expect(movements.filter((m) => m.kind === "charge")).toHaveLength(10);
    expect(movements.reduce((sum, m) => sum + m.amount, 0)).toBe(0);
    const gallery = (await (await edge.mf.dispatchFetch(`${ORIGIN}/api/image/gallery?limit=100`, { headers: auth })).json()) as Json;
    expect(gallery.data.total).toBe(10);
  }, 300_000);
});
