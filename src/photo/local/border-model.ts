/**
 * The background colour model of a product photo, learnt from its border: one colour profile per side
 * (averaged over a thin band, smoothed along the side, outliers where the product touches the edge replaced
 * by the side's median), interpolated over the image as a Coons patch. A flat backdrop, a linear gradient
 * and a soft vignette are all reproduced closely; noise or texture on the border makes `plain` false.
 *
 * @example
 * const model = new BorderModel(photo);
 * if (model.plain) model.colourAt(x, y, rgb); // rgb: Float32Array(3)
 */
import type { RgbaImage } from "../../images";

/** Mean absolute deviation (per channel, 0..255) above which a border is texture, not a backdrop. */
const MAX_BORDER_NOISE = 9;

export class BorderModel {
  readonly plain: boolean;
  /** Typical deviation of border pixels from the model (JPEG noise, grain). */
  readonly noise: number;
  /** Per-channel distance under which a pixel is background. */
  readonly tolerance: number;
  private readonly w: number;
  private readonly h: number;
  private readonly top: Float32Array;
  private readonly bottom: Float32Array;
  private readonly left: Float32Array;
  private readonly right: Float32Array;
  private readonly corners: Float32Array;

  constructor(img: RgbaImage) {
    const { width: w, height: h } = img;
    this.w = w;
    this.h = h;
    const band = Math.max(2, Math.round(Math.min(w, h) * 0.008));
    const smooth = Math.max(2, Math.round(Math.max(w, h) * 0.015));
    const top = sideProfile(img, "top", band);
    const bottom = sideProfile(img, "bottom", band);
    const left = sideProfile(img, "left", band);
    const right = sideProfile(img, "right", band);
    let deviation = 0;
    let count = 0;
    let outliers = 0;
    for (const side of [top, bottom, left, right]) {
      const raw = side.profile.slice();
      smoothProfile(side.profile, smooth);
      deviation += side.deviation(side.profile);
      count += raw.length / 3;
      outliers += replaceOutliers(side.profile, raw);
    }
    this.noise = deviation / count;
    const total = 2 * (w + h);
    // Over half the border being "product" means the photo has no backdrop to remove.
    this.plain = this.noise < MAX_BORDER_NOISE && outliers < total * 0.5;
    this.tolerance = Math.min(44, Math.max(16, 14 + this.noise * 4));
    this.top = top.profile;
    this.bottom = bottom.profile;
    this.left = left.profile;
    this.right = right.profile;
    const c = new Float32Array(12);
    for (let k = 0; k < 3; k++) {
      c[k] = (this.top[k]! + this.left[k]!) / 2;
      c[3 + k] = (this.top[(w - 1) * 3 + k]! + this.right[k]!) / 2;
      c[6 + k] = (this.bottom[k]! + this.left[(h - 1) * 3 + k]!) / 2;
      c[9 + k] = (this.bottom[(w - 1) * 3 + k]! + this.right[(h - 1) * 3 + k]!) / 2;
    }
    this.corners = c;
  }

  /** Writes the modelled background colour at (x, y) into `out` (RGB floats). */
  colourAt(x: number, y: number, out: Float32Array): void {
    const u = this.w > 1 ? x / (this.w - 1) : 0;
    const v = this.h > 1 ? y / (this.h - 1) : 0;
    const c = this.corners;
    const xi = x * 3;
    const yi = y * 3;
    for (let k = 0; k < 3; k++) {
      const edges = (1 - v) * this.top[xi + k]! + v * this.bottom[xi + k]! + (1 - u) * this.left[yi + k]! + u * this.right[yi + k]!;
      const bilinear = (1 - u) * (1 - v) * c[k]! + u * (1 - v) * c[3 + k]! + (1 - u) * v * c[6 + k]! + u * v * c[9 + k]!;
      out[k] = edges - bilinear;
    }
  }
}

interface Side {
  profile: Float32Array;
  /** Mean absolute deviation of the band's pixels from a smoothed profile. */
  deviation: (smoothed: Float32Array) => number;
}

/** Average colour across a band of `band` pixels along one side, per position along it. */
function sideProfile(img: RgbaImage, side: "top" | "bottom" | "left" | "right", band: number): Side {
  const { width: w, height: h, data } = img;
  const along = side === "top" || side === "bottom" ? w : h;
  const profile = new Float32Array(along * 3);
  const at = (i: number, j: number) => {
    // i: position along the side, j: depth into the image
    if (side === "top") return (j * w + i) * 4;
    if (side === "bottom") return ((h - 1 - j) * w + i) * 4;
    if (side === "left") return (i * w + j) * 4;
    return (i * w + (w - 1 - j)) * 4;
  };
  for (let i = 0; i < along; i++) {
    let r = 0;
    let g = 0;
    let b = 0;
    for (let j = 0; j < band; j++) {
      const p = at(i, j);
      r += data[p]!;
      g += data[p + 1]!;
      b += data[p + 2]!;
    }
    profile[i * 3] = r / band;
    profile[i * 3 + 1] = g / band;
    profile[i * 3 + 2] = b / band;
  }
  return {
    profile,
    deviation: (smoothed) => {
      let sum = 0;
      for (let i = 0; i < along; i++) {
        let dev = 0;
        for (let j = 0; j < band; j++) {
          const p = at(i, j);
          dev += Math.abs(data[p]! - smoothed[i * 3]!) + Math.abs(data[p + 1]! - smoothed[i * 3 + 1]!) + Math.abs(data[p + 2]! - smoothed[i * 3 + 2]!);
        }
        sum += dev / (3 * band);
      }
      return sum;
    },
  };
}

/** Box-smooths an interleaved RGB profile in place. */
function smoothProfile(p: Float32Array, r: number): void {
  const n = p.length / 3;
  const src = p.slice();
  for (let k = 0; k < 3; k++) {
    let acc = 0;
    let cnt = 0;
    for (let i = 0; i <= Math.min(r, n - 1); i++) (acc += src[i * 3 + k]!), cnt++;
    for (let i = 0; i < n; i++) {
      p[i * 3 + k] = acc / cnt;
      const add = i + r + 1;
      const sub = i - r;
      if (add < n) (acc += src[add * 3 + k]!), cnt++;
      if (sub >= 0) (acc -= src[sub * 3 + k]!), cnt--;
    }
  }
}

/**
 * Where the profile strays far from the side's median colour (the product touching the edge), uses the
 * median instead. Returns how many positions were replaced.
 */
function replaceOutliers(p: Float32Array, raw: Float32Array): number {
  const n = p.length / 3;
  const med = [0, 1, 2].map((k) => {
    const values = Array.from({ length: n }, (_, i) => raw[i * 3 + k]!).sort((a, b) => a - b);
    return values[n >> 1]!;
  });
  let replaced = 0;
  for (let i = 0; i < n; i++) {
    const d = Math.max(Math.abs(raw[i * 3]! - med[0]!), Math.abs(raw[i * 3 + 1]! - med[1]!), Math.abs(raw[i * 3 + 2]! - med[2]!));
    if (d > 48) {
      p[i * 3] = med[0]!;
      p[i * 3 + 1] = med[1]!;
      p[i * 3 + 2] = med[2]!;
      replaced++;
    }
  }
  return replaced;
}
