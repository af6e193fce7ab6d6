/**
 * Paints a scene's backdrop at the exact output size, one row at a time into the output buffer: wall and
 * floor gradients (a seamless sweep, or a wall and tabletop with a soft horizon, a spotlight room, or a
 * surface seen from above), the floor's material in perspective, a soft light behind the product, the
 * background lights layer, vignette and a faint grain. Lighting terms are separable (one factor per column
 * times one per row), so nothing costly runs per pixel.
 *
 * @example
 * const canvas = renderBackdrop(style, frame); // opaque RGBA, frame.width x frame.height
 */
import type { RgbaImage } from "../../images";
import { renderLights } from "./lights";
import { dither, smoothstep } from "./raster";
import type { Frame, SceneStyle } from "./style";
import { NoiseTile, surfacePattern } from "./texture";

/** Renders the backdrop (without props, shadow or product). */
export function renderBackdrop(style: SceneStyle, frame: Frame): RgbaImage {
  const { width: W, height: H, s: S, horizonY, cx, baseY, ph } = frame;
  const data = new Uint8Array(W * H * 4);
  const out = new Uint8ClampedArray(data.buffer, data.byteOffset, data.length);
  const tile = style.surface === "plain" ? null : new NoiseTile(style.seed);
  const lights = renderLights(style, frame);
  lights?.beginRows(W);
  const textureScale = 1024 / S;

  // Separable light terms: a soft glow behind the product, the floor pool of a spotlight, the vignette.
  const glowX = new Float32Array(W);
  const poolX = new Float32Array(W);
  const vigX = new Float32Array(W);
  const sideLight = new Float32Array(W);
  for (let x = 0; x < W; x++) {
    glowX[x] = Math.exp(-(((x - cx) / (0.55 * S)) ** 2));
    poolX[x] = Math.exp(-(((x - cx) / (0.42 * S)) ** 2));
    vigX[x] = 1 - smoothstep(0.35, 1.25, Math.abs((2 * x) / W - 1));
    sideLight[x] = 1 + 0.05 * ((x / W - 0.5) * -2 * style.lightFrom);
  }
  const glowCy = baseY - ph * 0.55;
  const split = style.split;
  const splitX = cx + 0.16 * S;
  const horizonSoft = Math.max(1, 0.004 * S);
  const floorDepth = Math.max(1, H - horizonY);
  const spot = style.backdrop === "spot";
  const top = style.backdrop === "top";
  const seamless = style.backdrop === "sweep";
  const e = 0.25;
  const step = S > 1200 ? 2 : 1;
  const pattern = new Float32Array(W);
  let patternFresh = false;
  const wall = [0, 0, 0];
  const floor = [0, 0, 0];

  for (let y = 0; y < H; y++) {
    const wallT = Math.min(1, y / Math.max(1, horizonY));
    const d = Math.max(0, (y - horizonY) / floorDepth);
    for (let k = 0; k < 3; k++) {
      wall[k] = style.wall[0][k]! + (style.wall[1][k]! - style.wall[0][k]!) * wallT;
      floor[k] = style.floor[0][k]! + (style.floor[1][k]! - style.floor[0][k]!) * (top ? y / H : d);
    }
    // How much of this row is floor: a wide blend for the sweep, a soft line for a table.
    const floorness = top ? 1 : seamless ? smoothstep(horizonY - 0.2 * S, horizonY + 0.14 * S, y) : smoothstep(horizonY - horizonSoft, horizonY + horizonSoft, y);
    const glowY = Math.exp(-(((y - glowCy) / (0.5 * S)) ** 2));
    const poolY = Math.exp(-(((y - baseY) / (0.09 * S)) ** 2));
    const vigY = 1 - smoothstep(0.35, 1.25, Math.abs((2 * y) / H - 1));
    // Contact of wall and table: a faint shade right at the horizon (ambient occlusion).
    const occlusion = seamless || top ? 1 : 1 - 0.07 * Math.exp(-(((y - horizonY) / (0.025 * S)) ** 2));
    const zf = (1 + e) / (d + e);
    // Ground depth for a camera with a focal length of about 1.2 x the shorter side: u and v then keep
    // the material's proportions (a shorter focal length smears it into streaks toward the horizon).
    const v = top ? y * textureScale : textureScale * 1.2 * S * zf;
    const detail = top ? 1 : smoothstep(0.02, 0.45, d);
    const row = y * W * 4;
    if (!tile && !lights && !split && !spot) {
      const fk = floorness * occlusion;
      smoothRow(out, row, W, y, wall, floor, 1 - floorness, fk, 0.06 * glowY, top ? 0 : 0.05 * glowY, style.vignette, vigY, glowX, sideLight, vigX);
      continue;
    }
    lights?.loadRow(y);
    if (tile && floorness > 0 && (step === 1 || (y & 1) === 0 || !patternFresh)) {
      // The material at about 1024 px detail: every other column and row above that, interpolated.
      for (let x = 0; x < W; x += step) pattern[x] = surfacePattern(style.surface, tile, top ? x * textureScale : (x - W / 2) * textureScale * zf, v, x, y);
      if (step === 2) for (let x = 1; x < W; x += 2) pattern[x] = x + 1 < W ? (pattern[x - 1]! + pattern[x + 1]!) / 2 : pattern[x - 1]!;
      patternFresh = true;
    }
    for (let x = 0; x < W; x++) {
      let r: number;
      let g: number;
      let b: number;
      // Wall
      let wr = wall[0]!;
      let wg = wall[1]!;
      let wb = wall[2]!;
      if (split && x > splitX) {
        const t = Math.min(1, (x - splitX) / 1.5);
        wr += (split[0] * (1 - wallT * 0.06) - wr) * t;
        wg += (split[1] * (1 - wallT * 0.06) - wg) * t;
        wb += (split[2] * (1 - wallT * 0.06) - wb) * t;
      }
      const glow = glowX[x]! * glowY;
      if (spot) {
        const k = glow * 0.9;
        wr += (wr * 2.6 + 28 - wr) * k;
        wg += (wg * 2.6 + 28 - wg) * k;
        wb += (wb * 2.6 + 30 - wb) * k;
      } else {
        const k = 1 + 0.06 * glow;
        wr *= k;
        wg *= k;
        wb *= k;
      }
      if (floorness < 1) {
        r = wr;
        g = wg;
        b = wb;
      } else {
        r = g = b = 0;
      }
      if (floorness > 0) {
        let fr = floor[0]!;
        let fg = floor[1]!;
        let fb = floor[2]!;
        if (tile) {
          const p = pattern[x]! * detail;
          if (p >= 0) {
            const t = p > 1 ? 1 : p;
            fr += (style.pattern[0] - fr) * t;
            fg += (style.pattern[1] - fg) * t;
            fb += (style.pattern[2] - fb) * t;
          } else {
            const t = p < -1 ? 0.6 : -p * 0.6;
            fr += (255 - fr) * t;
            fg += (255 - fg) * t;
            fb += (255 - fb) * t;
          }
        }
        const lit = sideLight[x]! * occlusion;
        fr *= lit;
        fg *= lit;
        fb *= lit;
        if (spot) {
          const k = poolX[x]! * poolY * 0.85 + glow * 0.25;
          fr += (fr * 3 + 40 - fr) * k;
          fg += (fg * 3 + 40 - fg) * k;
          fb += (fb * 3 + 42 - fb) * k;
        } else if (!top) {
          const k = 1 + 0.05 * glow;
          fr *= k;
          fg *= k;
          fb *= k;
        }
        r = r * (1 - floorness) + fr * floorness;
        g = g * (1 - floorness) + fg * floorness;
        b = b * (1 - floorness) + fb * floorness;
      }
      if (lights) {
        const li = lights.xi[x]!;
        const lt = lights.xt[x]!;
        const L = lights.row;
        if (lights.hasAdd) {
          // Lights sit on the wall: the floor only catches a little of their glow.
          const onWall = 1 - floorness * 0.85;
          const lr = L[0]![li]! + (L[0]![li + 1]! - L[0]![li]!) * lt;
          const lg = L[1]![li]! + (L[1]![li + 1]! - L[1]![li]!) * lt;
          const lb = L[2]![li]! + (L[2]![li + 1]! - L[2]![li]!) * lt;
          r += lr * onWall * (1 - r / 255);
          g += lg * onWall * (1 - g / 255);
          b += lb * onWall * (1 - b / 255);
        }
        if (lights.hasOver) {
          const a = L[6]![li]! + (L[6]![li + 1]! - L[6]![li]!) * lt;
          if (a > 0.002) {
            r = L[3]![li]! + (L[3]![li + 1]! - L[3]![li]!) * lt + r * (1 - a);
            g = L[4]![li]! + (L[4]![li + 1]! - L[4]![li]!) * lt + g * (1 - a);
            b = L[5]![li]! + (L[5]![li + 1]! - L[5]![li]!) * lt + b * (1 - a);
          }
        }
      }
      const vig = 1 - style.vignette * (1 - vigX[x]! * vigY);
      const n = dither(x, y);
      const i = row + x * 4;
      out[i] = r * vig + n;
      out[i + 1] = g * vig + n;
      out[i + 2] = b * vig + n;
      out[i + 3] = 255;
    }
  }
  return { width: W, height: H, data };
}

/**
 * A smooth row (no texture, no lights): the wall and floor colours are constant along it, and only the
 * glow, the key light's side and the vignette vary. Kept apart so the engine optimises this tight loop on
 * its own.
 */
function smoothRow(
  out: Uint8ClampedArray, row: number, W: number, y: number, wall: number[], floor: number[], wk: number, fk: number,
  wallGlow: number, floorGlow: number, vignette: number, vigY: number, glowX: Float32Array, sideLight: Float32Array, vigX: Float32Array,
): void {
  const wr = wall[0]! * wk;
  const wg = wall[1]! * wk;
  const wb = wall[2]! * wk;
  const fr = floor[0]! * fk;
  const fg = floor[1]! * fk;
  const fb = floor[2]! * fk;
  const base = 1 - vignette;
  const vy = vignette * vigY;
  for (let x = 0, i = row; x < W; x++, i += 4) {
    const gx = glowX[x]!;
    const wm = 1 + wallGlow * gx;
    const fm = sideLight[x]! * (1 + floorGlow * gx);
    const vig = base + vy * vigX[x]!;
    const n = dither(x, y);
    out[i] = (wr * wm + fr * fm) * vig + n;
    out[i + 1] = (wg * wm + fg * fm) * vig + n;
    out[i + 2] = (wb * wm + fb * fm) * vig + n;
    out[i + 3] = 255;
  }
}
