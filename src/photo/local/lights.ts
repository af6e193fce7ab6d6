/**
 * Out-of-focus light and props in the background, drawn on a small buffer (at most 512 px on its long
 * side), blurred there and sampled bilinearly by the backdrop: bokeh discs, fairy lights, hearts, confetti,
 * water droplets, foreground petals, pool caustics, mountain ridges and spotlight beams. Blurring a small
 * buffer is what makes these cheap at 2048 px, and out-of-focus light has no fine detail to lose.
 *
 * @example
 * const layer = renderLights(style, frame);
 * layer?.beginRows(frame.width); layer?.loadRow(y); // then layer.row[k][layer.xi[x]], weight layer.xt[x]
 */
import { boxBlur3, seeded, type Rgb } from "./raster";
import type { Frame, SceneStyle } from "./style";
import { NoiseTile } from "./texture";

export class LightLayer {
  /** Screen-blended light, 0..255 per channel. */
  readonly add: Float32Array[];
  /** Over-blended colour, premultiplied, plus its alpha (0..1). */
  readonly over: Float32Array[];
  constructor(
    readonly w: number,
    readonly h: number,
    readonly f: number,
  ) {
    this.add = [0, 1, 2].map(() => new Float32Array(w * h));
    this.over = [0, 1, 2, 3].map(() => new Float32Array(w * h));
  }

  /** Whether anything was drawn to the screen-blended or the over-blended channels. */
  hasAdd = false;
  hasOver = false;
  /** The current output row, interpolated vertically: 0..2 light, 3..5 premultiplied colour, 6 alpha. */
  readonly row: Float32Array[] = [];
  /** Per output column: the layer column to its left and the weight of the one to its right. */
  xi = new Int32Array(0);
  xt = new Float32Array(0);

  /** Prepares bilinear sampling for an output `width` pixels wide. */
  beginRows(width: number): void {
    this.xi = new Int32Array(width);
    this.xt = new Float32Array(width);
    for (let x = 0; x < width; x++) {
      const lx = Math.min(this.w - 1, Math.max(0, (x + 0.5) / this.f - 0.5));
      const i = Math.min(this.w - 2, lx | 0);
      this.xi[x] = Math.max(0, i);
      this.xt[x] = this.w > 1 ? lx - Math.max(0, i) : 0;
    }
    for (let k = 0; k < 7; k++) this.row[k] = new Float32Array(this.w + 1);
  }

  /** Interpolates output row `y` into `row` (only the channels in use). */
  loadRow(y: number): void {
    const ly = Math.min(this.h - 1, Math.max(0, (y + 0.5) / this.f - 0.5));
    const y0 = ly | 0;
    const y1 = Math.min(this.h - 1, y0 + 1);
    const t = ly - y0;
    const w = this.w;
    for (let k = 0; k < 7; k++) {
      if (k < 3 ? !this.hasAdd : !this.hasOver) continue;
      const src = k < 3 ? this.add[k]! : this.over[k - 3]!;
      const dst = this.row[k]!;
      for (let x = 0; x < w; x++) dst[x] = src[y0 * w + x]! + (src[y1 * w + x]! - src[y0 * w + x]!) * t;
      dst[w] = dst[w - 1]!;
    }
  }

  disc(buf: "add" | "over", x: number, y: number, r: number, colour: Rgb, strength: number, rim = 0): void {
    const target = buf === "add" ? this.add : this.over;
    const x0 = Math.max(0, Math.floor(x - r - 1));
    const x1 = Math.min(this.w - 1, Math.ceil(x + r + 1));
    const y0 = Math.max(0, Math.floor(y - r - 1));
    const y1 = Math.min(this.h - 1, Math.ceil(y + r + 1));
    for (let py = y0; py <= y1; py++) {
      for (let px = x0; px <= x1; px++) {
        const d = Math.hypot(px - x, py - y);
        let a = Math.min(1, Math.max(0, r - d + 0.5));
        if (a <= 0) continue;
        // Real bokeh discs are a little brighter at their rim.
        if (rim) a *= 1 - rim + rim * (d / r) ** 4;
        this.put(target, py * this.w + px, colour, a * strength, buf === "over");
      }
    }
  }

  put(target: Float32Array[], i: number, colour: Rgb, a: number, over: boolean): void {
    if (over) this.hasOver = true;
    else this.hasAdd = true;
    if (over) {
      const keep = 1 - a;
      for (let k = 0; k < 3; k++) target[k]![i] = colour[k]! * a + target[k]![i]! * keep;
      target[3]![i] = a + target[3]![i]! * keep;
    } else {
      for (let k = 0; k < 3; k++) target[k]![i] = target[k]![i]! + colour[k]! * a;
    }
  }

  blur(radius: number): void {
    for (const b of [...(this.hasAdd ? this.add : []), ...(this.hasOver ? this.over : [])]) boxBlur3(b, this.w, this.h, radius);
  }
}

/** Draws the style's lights, or returns null when it has none. */
export function renderLights(style: SceneStyle, frame: Frame): LightLayer | null {
  if (style.lights === "none" || (style.accents.length === 0 && style.lights !== "beams")) return null;
  const f = Math.max(1, Math.ceil(Math.max(frame.width, frame.height) / 512));
  const layer = new LightLayer(Math.ceil(frame.width / f), Math.ceil(frame.height / f), f);
  const rnd = seeded(`${style.seed}:lights`);
  const pick = () => style.accents[Math.floor(rnd() * style.accents.length)]!;
  const s = frame.s / f;
  const W = layer.w;
  const wallH = frame.horizonY / f;
  switch (style.lights) {
    case "bokeh":
      for (let i = 0; i < 26; i++) layer.disc("add", rnd() * W, rnd() * wallH * 0.92, s * (0.03 + rnd() * 0.06), pick(), 0.16 + rnd() * 0.22, 0.35);
      layer.blur(s * 0.012);
      break;
    case "fairy":
      for (let i = 0; i < 70; i++) {
        const x = rnd() * W;
        const y = rnd() * wallH * 0.95;
        const c = pick();
        layer.disc("add", x, y, s * (0.008 + rnd() * 0.02), c, 0.55 + rnd() * 0.4, 0.3);
        layer.disc("add", x, y, s * 0.05, c, 0.06);
      }
      layer.blur(s * 0.008);
      break;
    case "hearts":
      for (let i = 0; i < 18; i++) heart(layer, rnd() * W, rnd() * wallH * 0.9, s * (0.025 + rnd() * 0.045), pick(), 0.22 + rnd() * 0.25);
      layer.blur(s * 0.01);
      break;
    case "confetti":
      for (let i = 0; i < 110; i++) {
        const x = rnd() * W;
        const y = rnd() * layer.h * 0.85;
        if (Math.abs(x - frame.cx / f) < frame.pw / f / 2 && y > (frame.baseY - frame.ph) / f) continue;
        rect(layer, x, y, s * (0.008 + rnd() * 0.012), s * (0.004 + rnd() * 0.005), rnd() * Math.PI, pick(), 0.9);
      }
      beams(layer, frame, [255, 236, 200], 0.35);
      layer.blur(1.2);
      break;
    case "droplets":
      for (let i = 0; i < 40; i++) {
        const a = rnd() * Math.PI * 2;
        const d = (frame.pw / f) * (0.45 + rnd() * 0.7);
        const x = frame.cx / f + Math.cos(a) * d;
        const y = (frame.baseY - frame.ph * 0.55) / f + Math.sin(a) * d * 0.9;
        const r = s * (0.006 + rnd() * 0.018);
        layer.disc("over", x, y, r, [214, 240, 252], 0.45);
        layer.disc("add", x - r * 0.35, y - r * 0.35, r * 0.3, [255, 255, 255], 0.9);
      }
      for (let i = 0; i < 16; i++) layer.disc("add", rnd() * W, rnd() * wallH, s * (0.03 + rnd() * 0.05), pick(), 0.12, 0.4);
      layer.blur(0.9);
      break;
    case "petals":
      for (let i = 0; i < 14; i++) {
        // Foreground blossoms at the corners (very soft), a few more behind the product.
        const corner = i % 4;
        const x = (corner % 2 === 0 ? rnd() * 0.22 : 0.78 + rnd() * 0.22) * W;
        const y = (corner < 2 ? 0.8 + rnd() * 0.22 : rnd() * 0.25) * layer.h;
        layer.disc("over", x, y, s * (0.05 + rnd() * 0.06), pick(), 0.85);
      }
      layer.blur(s * 0.03);
      for (let i = 0; i < 12; i++) layer.disc("add", rnd() * W, rnd() * wallH * 0.9, s * (0.02 + rnd() * 0.04), pick(), 0.2, 0.3);
      layer.blur(s * 0.006);
      break;
    case "caustics":
      caustics(layer, new NoiseTile(`${style.seed}:water`), wallH);
      layer.blur(1.4);
      break;
    case "ridges":
      ridges(layer, style, new NoiseTile(`${style.seed}:ridges`), wallH);
      layer.blur(1.5);
      break;
    case "beams":
      beams(layer, frame, [255, 240, 210], 0.4);
      layer.blur(2);
      break;
  }
  return layer;
}

function heart(layer: LightLayer, cx: number, cy: number, r: number, colour: Rgb, strength: number): void {
  for (let py = Math.floor(cy - r * 1.4); py <= cy + r * 1.4; py++) {
    for (let px = Math.floor(cx - r * 1.4); px <= cx + r * 1.4; px++) {
      if (px < 0 || py < 0 || px >= layer.w || py >= layer.h) continue;
      const x = (px - cx) / r;
      const y = -(py - cy) / r + 0.25;
      const q = x * x + y * y - 1;
      if (q * q * q - x * x * y * y * y <= 0) layer.put(layer.add, py * layer.w + px, colour, strength, false);
    }
  }
}

function rect(layer: LightLayer, cx: number, cy: number, hw: number, hh: number, angle: number, colour: Rgb, a: number): void {
  const cos = Math.cos(angle);
  const sin = Math.sin(angle);
  const reach = Math.ceil(Math.hypot(hw, hh)) + 1;
  for (let py = Math.floor(cy - reach); py <= cy + reach; py++) {
    for (let px = Math.floor(cx - reach); px <= cx + reach; px++) {
      if (px < 0 || py < 0 || px >= layer.w || py >= layer.h) continue;
      const u = (px - cx) * cos + (py - cy) * sin;
      const v = -(px - cx) * sin + (py - cy) * cos;
      const cover = Math.min(1, Math.max(0, hw - Math.abs(u) + 0.5)) * Math.min(1, Math.max(0, hh - Math.abs(v) + 0.5));
      if (cover > 0) layer.put(layer.over, py * layer.w + px, colour, cover * a, true);
    }
  }
}

/** Two soft spotlight cones from the top corners onto the product. */
function beams(layer: LightLayer, frame: Frame, colour: Rgb, strength: number): void {
  const tx = frame.cx / layer.f;
  const ty = frame.baseY / layer.f;
  for (const ox of [layer.w * 0.08, layer.w * 0.92]) {
    const oy = -layer.h * 0.05;
    const dx = tx - ox;
    const dy = ty - oy;
    const len = Math.hypot(dx, dy);
    for (let py = 0; py < layer.h; py++) {
      for (let px = 0; px < layer.w; px++) {
        const along = ((px - ox) * dx + (py - oy) * dy) / len;
        if (along <= 0 || along > len * 1.05) continue;
        const across = Math.abs((px - ox) * dy - (py - oy) * dx) / len;
        const width = 4 + along * 0.16;
        const k = Math.exp(-((across / width) ** 2)) * (0.4 + 0.6 * (along / len));
        layer.put(layer.add, py * layer.w + px, colour, k * strength, false);
      }
    }
  }
}

function caustics(layer: LightLayer, tile: NoiseTile, wallH: number): void {
  for (let py = 0; py < Math.min(layer.h, Math.ceil(wallH) + 2); py++) {
    for (let px = 0; px < layer.w; px++) {
      const n = tile.at(px * 0.6, py * 0.9) * 8 + tile.at(px * 0.3 + 77, py * 0.45) * 3;
      const line = (1 - Math.abs(Math.sin(n))) ** 7;
      layer.put(layer.add, py * layer.w + px, [230, 255, 255], line * 0.3, false);
    }
  }
}

/** Two hazy mountain ridges above the horizon, the far one paler. */
function ridges(layer: LightLayer, style: SceneStyle, tile: NoiseTile, wallH: number): void {
  const sky = style.wall[1];
  style.accents.slice(0, 2).forEach((colour, k) => {
    const haze = k === 0 ? 0.6 : 0.35;
    const c: Rgb = [colour[0] + (sky[0] - colour[0]) * haze, colour[1] + (sky[1] - colour[1]) * haze, colour[2] + (sky[2] - colour[2]) * haze];
    const top = wallH * (k === 0 ? 0.5 : 0.66);
    for (let px = 0; px < layer.w; px++) {
      const n = tile.at(px * (k === 0 ? 0.25 : 0.45), 40 * k + 5) * 1.3 + tile.at(px * 1.2, 90 + k * 30) * 0.2;
      const ridgeY = top + (1.2 - n) * wallH * 0.2;
      for (let py = Math.max(0, Math.floor(ridgeY)); py < Math.min(layer.h, wallH + 3); py++) {
        const edge = Math.min(1, py - ridgeY + 1);
        layer.put(layer.over, py * layer.w + px, c, edge, true);
      }
    }
  });
}
