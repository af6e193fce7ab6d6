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

// A brand mark on a light plate: a leaf in a ring and the word "AURA", drawn by librsvg (through sharp), transparent around the plate.
const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="640" height="220" viewBox="0 0 640 220">
  <rect x="4" y="4" width="632" height="212" rx="40" fill="#fffaf0" fill-opacity="0.92"/>
  <circle cx="110" cy="110" r="78" fill="#fffaf0" stroke="#b8862b" stroke-width="10"/>
  <path d="M110 50 C 160 80, 160 140, 110 170 C 60 140, 60 80, 110 50 Z" fill="#2f6b4f"/>
  <path d="M110 62 L110 160" stroke="#fffaf0" stroke-width="5" stroke-linecap="round"/>
  <g fill="#1d1d1f" transform="translate(0 10)">
    <path d="M215 150 L250 50 L272 50 L307 150 L286 150 L278 126 L244 126 L236 150 Z M250 108 L272 108 L261 74 Z"/>
    <path d="M320 50 L340 50 L340 112 C340 128 350 134 362 134 C374 134 384 128 384 112 L384 50 L404 50 L404 113 C404 140 386 152 362 152 C338 152 320 140 320 113 Z"/>
    <path d="M420 150 L420 50 L456 50 C476 50 488 62 488 80 C488 94 480 104 468 108 L492 150 L469 150 L448 111 L440 111 L440 150 Z M440 67 L440 95 L454 95 C463 95 468 90 468 81 C468 72 463 67 454 67 Z"/>
    <path d="M500 150 L535 50 L557 50 L592 150 L571 150 L563 126 L529 126 L521 150 Z M535 108 L557 108 L546 74 Z"/>
  </g>
</svg>`;

const config = parseConfig({ LOG_LEVEL: "warn", RATE_LIMIT_PHOTO: "1000" });
const built = await buildNodeServices(config, { inMemory: true });
const app = createApp(built.services);
const { userId } = await createUser(built.services.db, "examples@localhost");
const { key } = await createApiKey(built.services.db, userId);

await mkdir(OUT, { recursive: true });
const product = renderDemoProduct(900);
const productJpeg = await sharp(Buffer.from(product.data), { raw: { width: product.width, height: product.height, channels: 4 } })
  .flatten({ background: "#ffffff" })
  .jpeg({ quality: 88 })
  .toBuffer();
const logoPng = await sharp(Buffer.from(LOGO_SVG)).png().toBuffer();
await writeFile(new URL("product.jpg", OUT), productJpeg);
await writeFile(new URL("logo.png", OUT), logoPng);

const examples = [
  {
    file: "studio.png",
    body: {
      promptId: "studio-plinth",
      overlayText: "New: Vitamin C Serum",
      marketingText: "Brighter skin in 14 days. 30 ml, dermatologist tested.",
      logoPlacement: "top-left",
      aspectRatio: "4:5",
    },
  },
  {
    file: "lifestyle.png",
    body: {
      promptId: "life-kitchen",
      overlayText: "Morning Glow",
      marketingText: "Made in small batches in Jaipur — ₹899",
      logoPlacement: "bottom-right",
      aspectRatio: "1:1",
    },
  },
  {
    file: "holiday-hindi.png",
    body: {
      promptId: "hol-diwali",
      overlayText: "दिवाली सेल — 20% छूट",
      marketingText: "इस त्योहार अपनों को दें प्राकृतिक चमक, सिर्फ़ ₹499 में",
      logoPlacement: "top-right",
      aspectRatio: "4:5",
    },
  },
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
  console.log(
    `docs/photo/${example.file}: ${json.data.width}x${json.data.height}, ${(png.length / 1024).toFixed(0)} KiB, ${(performance.now() - started).toFixed(0)} ms`,
  );
}
await built.close();
