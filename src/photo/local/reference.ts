/**
 * A reference image's palette applied to a scene style: its dominant colours (k-means on a 64 px
 * thumbnail, deterministic start) become the wall, the floor and the light accents, while the style's
 * kind of scene (sweep, table, material, props) stays.
 *
 * @example
 * const style = styleFromReference(decode(referenceBytes), sceneStyleFor("life-kitchen", prompt));
 */
import { resizeRgba, type RgbaImage } from "../../images";
import { luma, mix, type Rgb } from "./raster";
import type { SceneStyle } from "./style";

/**
 * The style with the reference's dominant colours: the most common becomes the wall, the next the floor.
 *
 * @example
 * styleFromReference({ width: 1, height: 1, data: new Uint8Array([200, 30, 40, 255]) }, base).wall[0]; // reddish
 */
export function styleFromReference(reference: RgbaImage, base: SceneStyle): SceneStyle {
  const palette = dominantColours(reference, 4);
  if (palette.length === 0) return base;
  const first = palette[0]!;
  const second = palette[1] ?? first;
  const lighten = (c: Rgb, k: number): Rgb => mix(c, [255, 255, 255], k);
  const darken = (c: Rgb, k: number): Rgb => mix(c, [0, 0, 0], k);
  const wall: [Rgb, Rgb] = [lighten(first, 0.08), darken(first, 0.1)];
  // A floor close to the wall but lit from the front reads as one set; a distinct second colour as a table.
  const floorBase = base.backdrop === "sweep" || base.backdrop === "spot" ? first : second;
  const floor: [Rgb, Rgb] = [darken(floorBase, 0.06), lighten(floorBase, 0.08)];
  return {
    ...base,
    seed: `${base.seed}:ref`,
    wall,
    floor,
    split: base.split ? second : undefined,
    pattern: luma(floorBase) > 90 ? darken(floorBase, 0.35) : lighten(floorBase, 0.3),
    propColour: base.prop === "none" ? base.propColour : lighten(second, 0.2),
    accents: base.accents.length ? palette.slice(1).map((c) => lighten(c, 0.3)) : base.accents,
  };
}

/** Up to `k` dominant colours, most common first. */
export function dominantColours(img: RgbaImage, k: number): Rgb[] {
  const scale = Math.min(1, 64 / Math.max(img.width, img.height));
  const small = resizeRgba(img, Math.max(1, Math.round(img.width * scale)), Math.max(1, Math.round(img.height * scale)));
  const d = small.data;
  const n = small.width * small.height;
  const points: number[] = [];
  for (let i = 0; i < n; i++) if (d[i * 4 + 3]! > 128) points.push(d[i * 4]!, d[i * 4 + 1]!, d[i * 4 + 2]!);
  const count = points.length / 3;
  if (count === 0) return [];
  // Start from luminance quantiles: deterministic and spread over the image's range.
  const order = Array.from({ length: count }, (_, i) => i).sort((a, b) => lumAt(points, a) - lumAt(points, b));
  const centres = Array.from({ length: Math.min(k, count) }, (_, j) => {
    const i = order[Math.floor(((j + 0.5) / k) * count)]!;
    return [points[i * 3]!, points[i * 3 + 1]!, points[i * 3 + 2]!];
  });
  const sizes = new Array<number>(centres.length).fill(0);
  for (let iter = 0; iter < 8; iter++) {
    const sums = centres.map(() => [0, 0, 0]);
    sizes.fill(0);
    for (let i = 0; i < count; i++) {
      let best = 0;
      let bestD = Infinity;
      for (let j = 0; j < centres.length; j++) {
        const c = centres[j]!;
        const dd = (points[i * 3]! - c[0]!) ** 2 + (points[i * 3 + 1]! - c[1]!) ** 2 + (points[i * 3 + 2]! - c[2]!) ** 2;
        if (dd < bestD) (bestD = dd), (best = j);
      }
      sizes[best]!++;
      for (let ch = 0; ch < 3; ch++) sums[best]![ch]! += points[i * 3 + ch]!;
    }
    centres.forEach((c, j) => {
      if (sizes[j]! > 0) for (let ch = 0; ch < 3; ch++) c[ch] = sums[j]![ch]! / sizes[j]!;
    });
  }
  return centres
    .map((c, j) => ({ c: [c[0]!, c[1]!, c[2]!] as Rgb, size: sizes[j]! }))
    .filter((e) => e.size > 0)
    .sort((a, b) => b.size - a.size)
    .map((e) => e.c);
}

function lumAt(points: number[], i: number): number {
  return points[i * 3]! * 0.299 + points[i * 3 + 1]! * 0.587 + points[i * 3 + 2]! * 0.114;
}
