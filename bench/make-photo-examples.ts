/**
 * Writes the product-photography examples of the README into docs/photo/: the demo product (a render drawn
 * in code, on a plain background) as product.jpg, a brand logo as logo.png, and scenes made through the
 * HTTP API on the local compositor, each with the logo and a text (one in Hindi).
 * Run: `npx tsx bench/make-photo-examples.ts`.
 */
import { mkdir, writeFile } from "node:fs/promises";
import sharp from "sharp";
import { parseConfig } from "../src/config";
import { createApp } from "../src/app";
import { buildNodeServices } from "../functions/node/services";
import { createApiKey, createUser } from "../src/http/api-keys";
import { renderDemoProduct } from "../src/photo/local";

const OUT = new URL("../docs/photo/", import.meta.url);

// A brand mark: a leaf in a ring and the word "AURA", drawn by librsvg (through sharp) with a transparent background.
const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="520" height="200" viewBox="0 0 520 200">
  <circle cx="100" cy="100" r="84" fill="#fffaf0" stroke="#b8862b" stroke-width="10"/>
  <path d="M100 40 C 150 70, 150 130, 100 160 C 50 130, 50 70, 100 40 Z" fill="#2f6b4f"/>
  <path d="M100 52 L100 150" stroke="#fffaf0" stroke-width="5" stroke-linecap="round"/>
  <g fill="#1d1d1f">
    <path d="M205 150 L240 50 L262 50 L297 150 L276 150 L268 126 L234 126 L226 150 Z M240 108 L262 108 L251 74 Z"/>
    <path d="M310 50 L330 50 L330 112 C330 128 340 134 352 134 C364 134 374 128 374 112 L374 50 L394 50 L394 113 C394 140 376 152 352 152 C328 152 310 140 310 113 Z"/>
    <path d="M410 150 L410 50 L446 50 C466 50 478 62 478 80 C478 94 470 104 458 108 L482 150 L459 150 L438 111 L430 111 L430 150 Z M430 67 L430 95 L444 95 C453 95 458 90 458 81 C458 72 453 67 444 67 Z"/>
  </g>
</svg>`;

const config = parseConfig({ LOG_LEVEL: "warn", RATE_LIMIT_PHOTO: "1000" });
const built = await buildNodeServices(config, { inMemory: true });
const app = createApp(built.services);
const { userId } = await createUser(built.services.db, "examples@localhost");
const { key } = await createApiKey(built.services.db, userId);

await mkdir(OUT, { recursive: true });
const product = renderDemoProduct(900);
const productJpeg = await sharp(Buffer.from(product.data), { raw: { width: product.width, height: product.height, channels: 4 } }).flatten({ background: "#ffffff" }).jpeg({ quality: 88 }).toBuffer();
const logoPng = await sharp(Buffer.from(LOGO_SVG)).png().toBuffer();
await writeFile(new URL("product.jpg", OUT), productJpeg);
await writeFile(new URL("logo.png", OUT), logoPng);

const examples = [
  { file: "studio.png", body: { promptId: "studio-plinth", overlayText: "New: Vitamin C Serum", marketingText: "Brighter skin in 14 days. 30 ml, dermatologist tested.", logoPlacement: "top-left", aspectRatio: "4:5" } },
  { file: "lifestyle.png", body: { promptId: "life-kitchen", overlayText: "Morning Glow", marketingText: "Made in small batches in Jaipur — ₹899", logoPlacement: "bottom-right", aspectRatio: "1:1" } },
  { file: "holiday-hindi.png", body: { promptId: "hol-diwali", overlayText: "दिवाली सेल — 20% छूट", marketingText: "इस त्योहार अपनों को दें प्राकृतिक चमक, सिर्फ़ ₹499 में", logoPlacement: "top-right", aspectRatio: "4:5" } },
  { file: "ecommerce.png", body: { promptId: "ecom-copy-space", overlayText: "Summer Sale −30%", logoPlacement: "bottom-left", aspectRatio: "16:9" } },
];

for (const example of examples) {
  const started = performance.now();
  const res = await app.request("/api/image/product-photography", {
    method: "POST",
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
    body: JSON.stringify({
      productImages: [{ dataUrl: `data:image/jpeg;base64,${productJpeg.toString("base64")}` }],
      logoImage: `data:image/png;base64,${logoPng.toString("base64")}`,
      logoSize: 0.22,
      resolution: "1K",
      ...example.body,
    }),
  });
  const json = (await res.json()) as { data?: { photoDataUri: string; width: number; height: number }; error?: unknown };
  if (!json.data) throw new Error(`${example.file}: ${res.status} ${JSON.stringify(json.error)}`);
  const png = Buffer.from(json.data.photoDataUri.split(",")[1]!, "base64");
  await writeFile(new URL(example.file, OUT), png);
  console.log(`docs/photo/${example.file}: ${json.data.width}x${json.data.height}, ${(png.length / 1024).toFixed(0)} KiB, ${(performance.now() - started).toFixed(0)} ms`);
}
await built.close();
