/**
 * Writes docs/qr-example.png: a shop URL with a logo, through the same renderer the API uses (scan check
 * included). Run: `npx tsx bench/make-qr-example.ts`.
 */
import { writeFile } from "node:fs/promises";
import sharp from "sharp";
import { parseHexColor } from "../src/qr/colors";
import { decodeQrImage } from "../src/qr/decode";
import { renderQr } from "../src/qr/render";
import { useNodeZxing } from "../test/qr/zxing-node";

const LOGO_SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="400" viewBox="0 0 400 400">
  <defs>
    <linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
      <stop offset="0" stop-color="#ff7a45"/><stop offset="1" stop-color="#d4380d"/>
    </linearGradient>
  </defs>
  <circle cx="200" cy="200" r="196" fill="url(#g)"/>
  <path d="M140 160 v-25 a60 60 0 0 1 120 0 v25" fill="none" stroke="#fff" stroke-width="22" stroke-linecap="round"/>
  <rect x="105" y="150" width="190" height="160" rx="26" fill="#fff"/>
  <circle cx="160" cy="200" r="13" fill="#d4380d"/><circle cx="240" cy="200" r="13" fill="#d4380d"/>
  <path d="M165 245 q35 32 70 0" fill="none" stroke="#d4380d" stroke-width="14" stroke-linecap="round"/>
</svg>`;

useNodeZxing();
const { data, info } = await sharp(Buffer.from(LOGO_SVG)).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
const payload = "https://shop.example.com/p/spring-tote?utm_source=qr";
const result = await renderQr(payload, {
  size: 600,
  fg: parseHexColor("#1F2A44"),
  bg: parseHexColor("#FFFFFF"),
  transparent: false,
  logo: { width: info.width, height: info.height, data: new Uint8Array(data) },
  logoSizeRatio: 0.3,
});
const check = await sharp(result.png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
const decoded = await decodeQrImage({ width: check.info.width, height: check.info.height, data: new Uint8Array(check.data) });
if (decoded?.text !== payload) throw new Error("the example does not decode");
await writeFile(new URL("../docs/qr-example.png", import.meta.url), result.png);
console.log(
  `docs/qr-example.png: version ${result.version}, EC ${result.ecLevel}, logo ${result.logoRatio}, ${result.png.length} bytes, decodes to ${decoded.text}`,
);
