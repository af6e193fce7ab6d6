/**
 * How legible text of a given colour would be over a region of an image, and what backing to add: measures
 * the region's luminance spread, its edge density (texture) and the share of pixels whose WCAG contrast
 * with the text is poor.
 *
 * @example
 * const stats = measureBackground(canvas, { x: 10, y: 10, width: 300, height: 80 }, [255, 255, 255]);
 * const backing = chooseBacking(stats); // "none" | "outline" | "panel"
 */
import type { RgbaImage } from "../../images/types";
import type { Rgb } from "./svg";

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface BackgroundStats {
  /** Standard deviation of gamma-encoded luma, 0..1. */
  lumaSpread: number;
  /** Mean absolute luma difference between neighbouring pixels, 0..1: high for texture and noise. */
  edgeDensity: number;
  /** Share of pixels whose contrast ratio with the text colour is below 3:1 (WCAG large text). */
  poorContrastShare: number;
  /** Relative luminance at the 5th and 95th percentiles, 0..1. */
  darkLuminance: number;
  lightLuminance: number;
}

const LINEAR = Float64Array.from({ length: 256 }, (_, i) => {
  const c = i / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
});

/**
 * WCAG relative luminance of an sRGB colour, 0..1.
 *
 * @example
 * luminance([255, 255, 255]); // 1
 */
export function luminance([r, g, b]: Rgb): number {
  return 0.2126 * LINEAR[r]! + 0.7152 * LINEAR[g]! + 0.0722 * LINEAR[b]!;
}

/**
 * WCAG contrast ratio of two relative luminances, 1..21.
 *
 * @example
 * contrastRatio(1, 0); // 21
 */
export function contrastRatio(a: number, b: number): number {
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}

const MAX_SAMPLES = 20_000;

/**
 * Statistics of the pixels of `rect` (clipped to the image), sampled on a grid for large regions. Transparent
 * pixels count as what they are composited over later, which we cannot know: they are read as their colour.
 *
 * @example
 * measureBackground(image, rect, [0, 0, 0]).poorContrastShare; // 0.8 on a dark photo
 */
export function measureBackground(image: RgbaImage, rect: Rect, text: Rgb): BackgroundStats {
  const x0 = Math.max(0, Math.floor(rect.x));
  const y0 = Math.max(0, Math.floor(rect.y));
  const x1 = Math.min(image.width, Math.ceil(rect.x + rect.width));
  const y1 = Math.min(image.height, Math.ceil(rect.y + rect.height));
  if (x1 - x0 < 2 || y1 - y0 < 2) return { lumaSpread: 0, edgeDensity: 0, poorContrastShare: 0, darkLuminance: 0, lightLuminance: 0 };
  const step = Math.max(1, Math.ceil(Math.sqrt(((x1 - x0) * (y1 - y0)) / MAX_SAMPLES)));
  const d = image.data;
  const row = image.width * 4;
  const textLum = luminance(text);
  const lums = new Float32Array(Math.ceil((x1 - x0) / step) * Math.ceil((y1 - y0) / step));
  let [count, sum, sumSq, edges, edgeCount, poor] = [0, 0, 0, 0, 0, 0];
  for (let y = y0; y < y1; y += step) {
    for (let x = x0; x < x1; x += step) {
      const i = (y * image.width + x) * 4;
      const v = (0.299 * d[i]! + 0.587 * d[i + 1]! + 0.114 * d[i + 2]!) / 255;
      sum += v;
      sumSq += v * v;
      // Texture is measured at full resolution (against the next pixel), whatever the sampling step.
      if (x + 1 < x1) {
        edges += Math.abs((0.299 * d[i + 4]! + 0.587 * d[i + 5]! + 0.114 * d[i + 6]!) / 255 - v);
        edgeCount++;
      }
      if (y + 1 < y1) {
        edges += Math.abs((0.299 * d[i + row]! + 0.587 * d[i + row + 1]! + 0.114 * d[i + row + 2]!) / 255 - v);
        edgeCount++;
      }
      const lum = 0.2126 * LINEAR[d[i]!]! + 0.7152 * LINEAR[d[i + 1]!]! + 0.0722 * LINEAR[d[i + 2]!]!;
      lums[count++] = lum;
      if (contrastRatio(lum, textLum) < 3) poor++;
    }
  }
  const mean = sum / count;
  const sorted = lums.subarray(0, count).sort();
  return {
    lumaSpread: Math.sqrt(Math.max(0, sumSq / count - mean * mean)),
    edgeDensity: edgeCount ? edges / edgeCount : 0,
    poorContrastShare: poor / count,
    darkLuminance: sorted[Math.floor(count * 0.05)]!,
    lightLuminance: sorted[Math.min(count - 1, Math.floor(count * 0.95))]!,
  };
}

/**
 * The backing that keeps text readable: nothing over a calm background it contrasts with, a panel over a busy
 * one or where most of it contrasts poorly, an outline (halo) where only parts do.
 *
 * @example
 * chooseBacking({ lumaSpread: 0.3, edgeDensity: 0.2, poorContrastShare: 0.1, darkLuminance: 0, lightLuminance: 1 }); // "panel"
 */
export function chooseBacking(stats: BackgroundStats): "none" | "outline" | "panel" {
  // Calibrated on photos: a studio backdrop or soft blur stays under 0.01 edge density even with JPEG noise,
  // a detailed scene (circuit board, foliage, fabric) is about 0.05. A smooth gradient has a wide luma spread
  // but no texture, so spread alone marks only stark patterns as busy.
  const busy = stats.edgeDensity > 0.025 || stats.lumaSpread > 0.3;
  if (busy || stats.poorContrastShare > 0.5) return "panel";
  if (stats.poorContrastShare > 0.01) return "outline";
  return "none";
}

/**
 * Panel or halo colour and opacity: black under light text, white under dark text, opaque enough that the
 * worst background pixel seen through the panel still gives 4.5:1 (capped at 0.9 to keep the scene visible).
 *
 * @example
 * backingFor([255, 255, 255], stats); // { color: [0, 0, 0], opacity: 0.6 }
 */
export function backingFor(text: Rgb, stats: BackgroundStats): { color: Rgb; opacity: number } {
  const textLum = luminance(text);
  const dark = contrastRatio(textLum, 0) >= contrastRatio(textLum, 1);
  const color: Rgb = dark ? [0, 0, 0] : [255, 255, 255];
  const worst = dark ? stats.lightLuminance : stats.darkLuminance;
  for (let opacity = 0.6; opacity < 0.9; opacity += 0.05) {
    // Blending happens on sRGB values; approximate it on luminance (close enough for choosing an opacity).
    const seen = dark ? worst * (1 - opacity) ** 2.2 : 1 - (1 - worst) * (1 - opacity);
    if (contrastRatio(seen, textLum) >= 4.5) return { color, opacity };
  }
  return { color, opacity: 0.9 };
}
