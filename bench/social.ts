/**
 * POST /api/v1/social/media end to end with a 12-megapixel JPEG (4000x3000, sent as Base64 JSON): auth,
 * rate limit, JSON parse, Base64 decode, sniff, decode (our JPEG decoder, scaled inside the IDCT), resize,
 * encode, storage put and the database insert, through app.request() on the embedded services. Beside it,
 * sharp (native libvips) doing the same resize + encode of the same bytes in the same process, and the
 * ratio; plus the pipeline alone (normaliseToJpeg) so the API's own overhead shows.
 *
 * Run alone: `npx tsx bench/social.ts`; or with the others: `npm run bench -- social`.
 */
import { pathToFileURL } from "node:url";
import sharp from "sharp";
import { normaliseToJpeg } from "../src/images/normalise";
import { createTestApp } from "../test/helpers/harness";
import { makePhotoJpeg } from "../test/helpers/images";
import { medianMs, RUNS } from "./timing";

/** Prints the figures; timings are never assertions. */
export async function benchSocial(): Promise<void> {
  const input = await makePhotoJpeg(4000, 3000, 85);
  const payload = JSON.stringify({ base64: input.toString("base64"), mimeType: "image/jpeg" });
  const h = await createTestApp({ env: { RATE_LIMIT_SOCIAL_WRITE: "100000" } });
  try {
    const { apiKey } = await h.createUser();
    let last: { width: number; height: number; bytes: number } | undefined;
    const api = await medianMs(async () => {
      const res = await h.app.request("/api/v1/social/media", { method: "POST", headers: h.json(apiKey), body: payload });
      if (res.status !== 201) throw new Error(`POST /media answered ${res.status}: ${await res.text()}`);
      last = ((await res.json()) as { data: typeof last }).data;
    });
    const pipeline = await medianMs(() => normaliseToJpeg(input));
    const peer = await medianMs(() =>
      sharp(input).rotate().resize(1440, 1800, { fit: "inside", withoutEnlargement: true }).flatten({ background: "#ffffff" }).jpeg({ quality: 85 }).toBuffer(),
    );

    console.log(
      `social: POST /media with a 12 MP JPEG (4000x3000, ${(input.length / 1e6).toFixed(1)} MB, ${(payload.length / 1e6).toFixed(1)} MB of JSON) -> ${last!.width}x${last!.height} JPEG (${(last!.bytes / 1024).toFixed(0)} KiB), median of ${RUNS}`,
    );
    row("POST /media end to end (ours, no native code)", api);
    row("  of which normaliseToJpeg", pipeline);
    row(`sharp resize + encode (libvips, ${sharp.concurrency()} threads)`, peer);
    console.log(`  ${"ratio POST /media / sharp".padEnd(44)} ${(api / peer).toFixed(2)}x`);
    console.log(`  ${"API overhead beyond the pipeline".padEnd(44)} ${(api - pipeline).toFixed(0).padStart(5)} ms`);
  } finally {
    await h.close();
  }
}

function row(label: string, ms: number): void {
  console.log(`  ${label.padEnd(44)} ${ms.toFixed(0).padStart(5)} ms`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await benchSocial();
}
