/**
 * What the service draws itself on every generated scene, after the generator: the exact output size,
 * the logo at its placement and size, and the texts. A model never draws these, so they are never garbled
 * and always where they were asked.
 *
 * @example
 * const canvas = fitCover(scene, 2048, 2048);
 * const logoBox = placeLogo(canvas, logo, "bottom-right", 0.15);
 * await drawTexts(canvas, { overlayText: "Diwali Sale", marketingText: "₹499 only" }, logoBox);
 */
import { drawOver, resizePremultiplied, resizeRgba, type RgbaImage } from "../images";
import { premultiply } from "../images/alpha";
import { drawText } from "./text";
import type { LogoPlacement } from "./types";

export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Scales `img` to cover `width` x `height` and crops the centre: exactly that size, nothing stretched. */
export function fitCover(img: RgbaImage, width: number, height: number): RgbaImage {
  if (img.width === width && img.height === height) return img;
  const scale = Math.max(width / img.width, height / img.height);
  const sw = Math.max(width, Math.round(img.width * scale));
  const sh = Math.max(height, Math.round(img.height * scale));
  const scaled = resizeRgba(img, sw, sh);
  if (sw === width && sh === height) return scaled;
  const x0 = (sw - width) >> 1;
  const y0 = (sh - height) >> 1;
  const out = new Uint8Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const from = ((y + y0) * sw + x0) * 4;
    out.set(scaled.data.subarray(from, from + width * 4), y * width * 4);
  }
  return { width, height, data: out };
}

/** The margin between the image edge and the logo or the texts: 4 % of the shorter side. */
export function marginOf(canvas: { width: number; height: number }): number {
  return Math.round(Math.min(canvas.width, canvas.height) * 0.04);
}

/**
 * Where a logo of `width` x `height` goes for a placement.
 *
 * @example
 * logoBox({ width: 1000, height: 1000 }, "top-left", 150, 60); // { x: 40, y: 40, width: 150, height: 60 }
 */
export function logoBox(canvas: { width: number; height: number }, placement: LogoPlacement, width: number, height: number): Box {
  const m = marginOf(canvas);
  const [row, col] = placement === "center" ? ["center", "center"] : placement.split("-");
  const x = col === "left" ? m : col === "right" ? canvas.width - width - m : Math.round((canvas.width - width) / 2);
  const y = row === "top" ? m : row === "bottom" ? canvas.height - height - m : Math.round((canvas.height - height) / 2);
  return { x, y, width, height };
}

/**
 * Draws the logo with its own transparency: its width is `size` x the canvas width, its height follows its
 * aspect ratio (a logo too tall for the canvas is scaled to fit inside the margins). Returns its box.
 */
export function placeLogo(canvas: RgbaImage, logo: RgbaImage | PreparedLogo, placement: LogoPlacement, size: number): Box {
  // A prepared logo is drawn at its own size (prepareLogo made it for canvases of this size).
  const prepared = "premultiplied" in logo ? logo : prepareLogo(logo, canvas, size);
  const box = logoBox(canvas, placement, prepared.width, prepared.height);
  drawOver(canvas, prepared, box.x, box.y);
  return box;
}

/** A logo premultiplied at the size it is drawn at (`prepareLogo`): `placeLogo` draws it as it is. */
export type PreparedLogo = RgbaImage & { premultiplied: true };

/** How far (a share of each side) a logo's own size may be from its drawn size and still be drawn as it is. */
const CLOSE_ENOUGH = 0.01;

/**
 * The logo resized once for every canvas of a request (they are all one size), premultiplied, so each item
 * draws it without a resize of its own: in a Worker a resize is two full-size buffers of garbage. A logo
 * within 1 % of its drawn size on both sides is not resampled at all (it would only blur): it is
 * premultiplied where it is, as `owned` allows, and drawn at its own size.
 *
 * @example
 * const logo = prepareLogo(decoded, { width: 2048, height: 2048 }, 0.15, true);
 */
export function prepareLogo(logo: RgbaImage, canvas: { width: number; height: number }, size: number, owned = false): PreparedLogo {
  const { width, height } = logoDrawnSize(canvas, logo, size);
  const close = Math.abs(width - logo.width) <= logo.width * CLOSE_ENOUGH && Math.abs(height - logo.height) <= logo.height * CLOSE_ENOUGH;
  const image = close ? premultiply(logo, owned) : resizePremultiplied(logo, width, height);
  return { ...image, premultiplied: true };
}

/** The logo's drawn size: `size` x the canvas width, its height by its aspect ratio, fitted inside the margins. */
export function logoDrawnSize(
  canvas: { width: number; height: number },
  logo: { width: number; height: number },
  size: number,
): { width: number; height: number } {
  const m = marginOf(canvas);
  let width = Math.max(1, Math.round(canvas.width * size));
  let height = Math.max(1, Math.round((logo.height * width) / logo.width));
  const maxHeight = canvas.height - 2 * m;
  if (height > maxHeight) {
    width = Math.max(1, Math.round((width * maxHeight) / height));
    height = maxHeight;
  }
  return { width, height };
}

export interface Texts {
  overlayText?: string;
  marketingText?: string;
}

/**
 * Where the texts go: `bands` puts overlayText at the top and marketingText at the bottom, centred;
 * `copy-left` (templates that leave open space on the left) stacks both, left-aligned, in that space.
 */
export type TextLayout = "bands" | "copy-left";

/**
 * Draws the texts, each wrapped or scaled to fit its area, moved clear of the logo. Returns the rectangles
 * actually covered.
 */
export async function drawTexts(canvas: RgbaImage, texts: Texts, logo?: Box, layout: TextLayout = "bands"): Promise<Box[]> {
  const m = marginOf(canvas);
  const short = Math.min(canvas.width, canvas.height);
  const overlay = { fontSize: Math.round(short * 0.075), minFontSize: Math.max(12, Math.round(short * 0.03)), maxLines: 2, weight: 700 as const };
  const marketing = { fontSize: Math.round(short * 0.045), minFontSize: Math.max(11, Math.round(short * 0.022)), maxLines: 3, weight: 400 as const };
  const draw = async (text: string, area: Box, style: typeof overlay | typeof marketing, anchor: "top" | "bottom", align: "center" | "left") =>
    drawText(canvas, text, area, { ...style, anchor, align, color: textColourFor(canvas, area), legibility: "auto" });
  const drawn: Box[] = [];

  if (layout === "copy-left") {
    let area: Box = { x: m, y: Math.round(canvas.height * 0.18), width: Math.round(canvas.width * 0.5) - m, height: Math.round(canvas.height * 0.64) };
    if (logo && logo.x < area.x + area.width && logo.y < area.y + area.height && logo.y + logo.height > area.y) {
      area =
        logo.y + logo.height / 2 > canvas.height / 2
          ? { ...area, height: Math.max(1, logo.y - m - area.y) }
          : { ...area, y: logo.y + logo.height + m, height: Math.max(1, area.y + area.height - (logo.y + logo.height + m)) };
    }
    if (texts.overlayText) {
      // Open space takes a bigger headline than a band over the scene.
      const headline = { ...overlay, fontSize: Math.round(short * 0.1), maxLines: 3 };
      const box = texts.marketingText
        ? await draw(texts.overlayText, { ...area, height: Math.round(area.height * 0.55) }, headline, "top", "left")
        : await drawText(canvas, texts.overlayText, area, {
            ...headline,
            anchor: "center",
            align: "left",
            color: textColourFor(canvas, area),
            legibility: "auto",
          });
      drawn.push(box);
      area = { ...area, y: box.y + box.height + Math.round(m / 2), height: Math.max(1, area.y + area.height - (box.y + box.height + Math.round(m / 2))) };
    }
    if (texts.marketingText) drawn.push(await draw(texts.marketingText, area, marketing, "top", "left"));
    return drawn;
  }

  if (texts.overlayText) {
    const band = clearOfLogo({ x: m, y: m, width: canvas.width - 2 * m, height: Math.round(canvas.height * 0.2) }, logo, m, "top");
    drawn.push(await draw(texts.overlayText, band, overlay, "top", "center"));
  }
  if (texts.marketingText) {
    const h = Math.round(canvas.height * 0.2);
    const band = clearOfLogo({ x: m, y: canvas.height - m - h, width: canvas.width - 2 * m, height: h }, logo, m, "bottom");
    drawn.push(await draw(texts.marketingText, band, marketing, "bottom", "center"));
  }
  return drawn;
}

/**
 * The band without the logo's part of it. A logo at a side takes its width off both sides when enough
 * remains, so the text stays centred on the image; otherwise the text takes the rest of the band beside
 * the logo; a centred logo, or one too wide for either, pushes the band past it.
 */
function clearOfLogo(band: Box, logo: Box | undefined, gap: number, edge: "top" | "bottom"): Box {
  if (!logo || logo.y >= band.y + band.height || logo.y + logo.height <= band.y || logo.x >= band.x + band.width || logo.x + logo.width <= band.x) return band;
  const logoCentre = logo.x + logo.width / 2;
  const bandCentre = band.x + band.width / 2;
  if (Math.abs(logoCentre - bandCentre) > band.width / 6) {
    const onLeft = logoCentre < bandCentre;
    const cut = onLeft ? logo.x + logo.width + gap - band.x : band.x + band.width - (logo.x - gap);
    if (band.width - 2 * cut >= band.width * 0.6) return { ...band, x: band.x + cut, width: band.width - 2 * cut };
    if (band.width - cut >= band.width * 0.4) return { ...band, x: onLeft ? band.x + cut : band.x, width: band.width - cut };
  }
  if (edge === "top") return { ...band, y: logo.y + logo.height + gap };
  return { ...band, y: logo.y - gap - band.height };
}

/** White on dark scenes, near-black on light ones, judged by the mean luminance behind the band. */
function textColourFor(canvas: RgbaImage, band: Box): [number, number, number] {
  const d = canvas.data;
  let sum = 0;
  let n = 0;
  const step = Math.max(1, Math.floor(Math.sqrt((band.width * band.height) / 4000)));
  for (let y = Math.max(0, band.y); y < Math.min(canvas.height, band.y + band.height); y += step) {
    for (let x = Math.max(0, band.x); x < Math.min(canvas.width, band.x + band.width); x += step) {
      const i = (y * canvas.width + x) * 4;
      sum += 0.2126 * d[i]! + 0.7152 * d[i + 1]! + 0.0722 * d[i + 2]!;
      n++;
    }
  }
  return n && sum / n < 140 ? [255, 255, 255] : [24, 24, 27];
}
