/**
 * A photo's public result URL leads to none of its inputs: the customer's product photos, reference and logo
 * are stored under random names of their own, not beside the result under the job's id.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { MemoryStorage } from "../../src/adapters/storage/memory";
import { dataUrl, logoDataUrl, photoHarness, productJpeg, type PhotoHarness } from "../photo/fixtures";

let h: PhotoHarness;
const stored: string[] = [];

beforeAll(async () => {
  const storage = MemoryStorage("http://127.0.0.1:8787");
  const put = storage.put;
  storage.put = (key, bytes, contentType) => {
    stored.push(key);
    return put(key, bytes, contentType);
  };
  h = await photoHarness({ overrides: { storage } });
});
afterAll(() => h.close());

it("no input is found from the job id of a result URL, and each input has a name of its own", async () => {
  const product = await dataUrl(await productJpeg());
  const res = await h.post(
    {
      productImages: [{ dataUrl: product }, { dataUrl: product }],
      referenceImage: await logoDataUrl(),
      logoImage: await logoDataUrl(),
      promptId: "studio-white-sweep",
      model: "standard",
      resolution: "1K",
      outputResult: "url",
    },
    { Prefer: "respond-async" },
  );
  expect(res.status).toBe(202);
  const jobPath = new URL(res.headers.get("location")!, "http://x").pathname;
  let job: any;
  for (let i = 0; i < 200; i++) {
    job = ((await (await h.app.request(jobPath, { headers: h.auth(h.apiKey) })).json()) as { data: any }).data;
    if (job.status !== "queued" && job.status !== "running") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(job.status).toBe("succeeded");
  const resultUrl: string = job.result.images[0].imageUrl;
  const resultPath = new URL(resultUrl).pathname;
  expect((await h.app.request(resultPath)).status).toBe(200);

  // The inputs were stored (the async job reads them back): two products, the reference and the logo.
  const inputs = stored.filter((k) => k.startsWith("photo/in/"));
  expect(inputs.length).toBe(4);
  const jobId = job.id as string;
  for (const key of inputs) {
    expect(key).not.toContain(jobId);
    expect((await h.app.request(`/files/${key}`)).status).toBe(200);
  }
  expect(new Set(inputs).size).toBe(inputs.length);

  // What a stranger holding the result URL would try next to it.
  const dir = resultPath.replace(/\/files\/photo\/out\/([^/]+)\/.*$/, "$1");
  expect(dir).toBe(jobId);
  for (const name of ["product-0", "product-1", "reference", "logo"]) {
    for (const ext of ["jpg", "png", "webp"]) {
      expect((await h.app.request(`/files/photo/in/${jobId}/${name}.${ext}`)).status, `${name}.${ext}`).toBe(404);
    }
  }
});
