/**
 * Credits across crashes of the real server (`npm start` on PGlite, the local compositor): SIGKILL while 20
 * async jobs run, three times. After each restart every job ends, and then every hold is settled or released
 * (nothing reserved), the balance is the grants minus the images delivered (the gallery), and no job's image
 * is charged twice.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";
import { productJpeg } from "./fixtures";

type Json = Record<string, any>;

let server: ServerProcess;
let product: string;

beforeAll(async () => {
  server = await startServerProcess({
    env: { PHOTO_SIGNUP_CREDITS: "0", RATE_LIMIT_PHOTO: "1000", RATE_LIMIT_PHOTO_READ: "100000", HEAVY_QUEUE_PER_USER: "100", HEAVY_QUEUE: "200" },
  });
  product = `data:image/jpeg;base64,${(await productJpeg(240, 320)).toString("base64")}`;
}, 120_000);
afterAll(() => server?.dispose());

const auth = () => ({ Authorization: `Bearer ${server.apiKey}` });
const getJson = async (path: string) => (await (await fetch(`${server.baseUrl}${path}`, { headers: auth() })).json()) as Json;

async function waitFor<T>(what: string, probe: () => Promise<T | null>, seconds = 240): Promise<T> {
  for (let i = 0; i < seconds * 4; i++) {
    const value = await probe().catch(() => null);
    if (value !== null) return value;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("credits when the server is killed", () => {
  it("SIGKILL while 20 async jobs run, three times: every hold settled or released, balance = grants - images delivered, nothing charged twice", async () => {
    const grants = 3 * 20 * 4;
    expect(await server.admin("credits", "--email", "dev@localhost", "--add", String(grants), "--note", "crash test")).toContain(`balance\t${grants}`);
    const jobs: string[] = [];
    for (let round = 0; round < 3; round++) {
      const accepted = await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const res = await fetch(`${server.baseUrl}/api/image/product-photography`, {
            method: "POST",
            headers: { ...auth(), "Content-Type": "application/json", Prefer: "respond-async" },
            body: JSON.stringify({
              productImages: [{ dataUrl: product, label: `r${round}-${i}` }],
              promptId: "studio-white-sweep",
              model: "standard",
              outputResult: "url",
            }),
          });
          expect(res.status).toBe(202);
          return ((await res.json()) as Json).data.id as string;
        }),
      );
      jobs.push(...accepted);
      // Kill once some of this round's images are made and others are still being made.
      await waitFor("a first image of the round", async () => {
        const statuses = await Promise.all(accepted.map(async (id) => (await getJson(`/api/image/product-photography/jobs/${id}`)).data.status));
        return statuses.includes("succeeded") ? true : null;
      });
      await server.kill("SIGKILL");
      await server.restart();
      await waitFor("every job to end", async () => {
        const statuses = await Promise.all(accepted.map(async (id) => (await getJson(`/api/image/product-photography/jobs/${id}`)).data.status));
        return statuses.every((s) => s === "succeeded" || s === "failed") ? statuses : null;
      });
    }

    // The sweep releases what a job that ended still held; the first sweep after start runs at once.
    const credits = await waitFor("nothing reserved", async () => {
      const data = (await getJson("/api/image/credits?limit=100")).data;
      return data.reserved === 0 ? data : null;
    });
    const movements: Json[] = [];
    for (let offset = 0; ; offset += 100) {
      const page = (await getJson(`/api/image/credits?limit=100&offset=${offset}`)).data.movements;
      movements.push(...page.items);
      if (!page.hasMore) break;
    }
    const gallery = (await getJson("/api/image/gallery?limit=100")).data;
    const charges = movements.filter((m) => m.kind === "charge");
    expect(movements.filter((m) => m.kind === "grant").reduce((s, m) => s + m.amount, 0)).toBe(grants);
    expect(credits.balance).toBe(grants - 4 * gallery.total);
    expect(movements.reduce((s, m) => s + m.amount, 0)).toBe(credits.balance);
    expect(charges).toHaveLength(gallery.total);
    expect(new Set(charges.map((m) => m.jobId)).size).toBe(charges.length);
    const succeeded = (await Promise.all(jobs.map(async (id) => (await getJson(`/api/image/product-photography/jobs/${id}`)).data))).filter(
      (j) => j.status === "succeeded",
    );
    // Every job that succeeded was charged, and at least most of them made it through the crashes.
    expect(succeeded.every((j) => charges.some((m) => m.jobId === j.id))).toBe(true);
    expect(succeeded.length).toBeGreaterThanOrEqual(40);
    console.log(`crash test: ${succeeded.length} of 60 jobs succeeded, ${gallery.total} images, balance ${credits.balance} of ${grants}`);
  }, 900_000);
});
