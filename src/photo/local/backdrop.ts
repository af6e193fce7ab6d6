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
  const { width: W, height: H } = frame;
  const data = new Uint8Array(W * H * 4);
  const out = new Uint8ClampedArray(data.buffer, data.byteOffset, data.length);
  const scene = prepareScene(style, frame);
  const { columns } = scene;
  const smooth = !scene.tile && !scene.lights && !style.split && !scene.spot;
  let patternFresh = false;
  for (let y = 0; y < H; y++) {
    const row = rowTerms(scene, y);
    if (smooth) {
      const fk = row.floorness * row.occlusion;
      const wallGlow = 0.06 * row.glowY;
      smoothRow(
        out,
        y * W * 4,
        W,
        y,
        row.wall,
        row.floor,
        1 - row.floorness,
        fk,
        wallGlow,
        scene.top ? 0 : 0.05 * row.glowY,
        style.vignette,
        row.vigY,
        columns.glowX,
        columns.sideLight,
        columns.vigX,
      );
      continue;
    }
    scene.lights?.loadRow(y);
    if (scene.tile && row.floorness > 0 && (scene.step === 1 || (y & 1) === 0 || !patternFresh)) {
      fillPattern(scene, row, y);
      patternFresh = true;
    }
    shadeRow(scene, row);
    if (scene.lights) lightRow(scene, row);
    writeRow(out, scene, row, y);
  }
  return { width: W, height: H, data };
}

/** Everything about a backdrop that does not change from row to row. */
interface Scene {
  style: SceneStyle;
  frame: Frame;
  tile: NoiseTile | null;
  lights: ReturnType<typeof renderLights>;
  columns: Columns;
  spot: boolean;
  top: boolean;
  seamless: boolean;
  textureScale: number;
  /** Texture sampled every `step` columns and rows (2 above 1200 px), interpolated between. */
  step: number;
  splitX: number;
  horizonSoft: number;
  floorDepth: number;
  glowCy: number;
  /** The row being shaded, as doubles (exactly the values a single loop would hold in locals). */
  r: Float64Array;
  g: Float64Array;
  b: Float64Array;
  pattern: Float32Array;
}

/** Separable light terms per column: a soft glow behind the product, the floor pool of a spotlight, the vignette. */
interface Columns {
  glowX: Float32Array;
  poolX: Float32Array;
  vigX: Float32Array;
  sideLight: Float32Array;
}

function prepareScene(style: SceneStyle, frame: Frame): Scene {
  const { width: W, height: H, s: S, horizonY, cx, baseY, ph } = frame;
  const lights = renderLights(style, frame);
  lights?.beginRows(W);
  const columns: Columns = { glowX: new Float32Array(W), poolX: new Float32Array(W), vigX: new Float32Array(W), sideLight: new Float32Array(W) };
  for (let x = 0; x < W; x++) {
    columns.glowX[x] = Math.exp(-(((x - cx) / (0.55 * S)) ** 2));
    columns.poolX[x] = Math.exp(-(((x - cx) / (0.42 * S)) ** 2));
    columns.vigX[x] = 1 - smoothstep(0.35, 1.25, Math.abs((2 * x) / W - 1));
    columns.sideLight[x] = 1 + 0.05 * ((x / W - 0.5) * -2 * style.lightFrom);
  }
  return {
    style,
    frame,
    tile: style.surface === "plain" ? null : new NoiseTile(style.seed),
    lights,
    columns,
    spot: style.backdrop === "spot",
    top: style.backdrop === "top",
    seamless: style.backdrop === "sweep",
    textureScale: 1024 / S,
    step: S > 1200 ? 2 : 1,
    splitX: cx + 0.16 * S,
    horizonSoft: Math.max(1, 0.004 * S),
    floorDepth: Math.max(1, H - horizonY),
    glowCy: baseY - ph * 0.55,
    r: new Float64Array(W),
    g: new Float64Array(W),
    b: new Float64Array(W),
    pattern: new Float32Array(W),
  };
}

/** What varies by row only: the wall and floor colours, how much of the row is floor, the row's light terms. */
interface RowTerms {
  wall: number[];
  floor: number[];
  wallT: number;
  floorness: number;
  glowY: number;
  poolY: number;
  vigY: number;
  occlusion: number;
  zf: number;
  v: number;
  detail: number;
}

function rowTerms(scene: Scene, y: number): RowTerms {
  const { style, frame, top, seamless, textureScale } = scene;
  const { height: H, s: S, horizonY, baseY } = frame;
  const e = 0.25;
  const wallT = Math.min(1, y / Math.max(1, horizonY));
  const d = Math.max(0, (y - horizonY) / scene.floorDepth);
  const wall = [0, 0, 0];
  const floor = [0, 0, 0];
  for (let k = 0; k < 3; k++) {
    wall[k] = style.wall[0][k]! + (style.wall[1][k]! - style.wall[0][k]!) * wallT;
    floor[k] = style.floor[0][k]! + (style.floor[1][k]! - style.floor[0][k]!) * (top ? y / H : d);
  }
  const zf = (1 + e) / (d + e);
  return {
    wall,
    floor,
    wallT,
    // How much of this row is floor: a wide blend for the sweep, a soft line for a table.
    floorness: top
      ? 1
      : seamless
        ? smoothstep(horizonY - 0.2 * S, horizonY + 0.14 * S, y)
        : smoothstep(horizonY - scene.horizonSoft, horizonY + scene.horizonSoft, y),
    glowY: Math.exp(-(((y - scene.glowCy) / (0.5 * S)) ** 2)),
    poolY: Math.exp(-(((y - baseY) / (0.09 * S)) ** 2)),
    vigY: 1 - smoothstep(0.35, 1.25, Math.abs((2 * y) / H - 1)),
    // Contact of wall and table: a faint shade right at the horizon (ambient occlusion).
    occlusion: seamless || top ? 1 : 1 - 0.07 * Math.exp(-(((y - horizonY) / (0.025 * S)) ** 2)),
    zf,
    // Ground depth for a camera with a focal length of about 1.2 x the shorter side: u and v then keep
    // the material's proportions (a shorter focal length smears it into streaks toward the horizon).
    v: top ? y * textureScale : textureScale * 1.2 * S * zf,
    detail: top ? 1 : smoothstep(0.02, 0.45, d),
  };
}

/** The floor material for this row at about 1024 px detail: every other column above that, interpolated. */
function fillPattern(scene: Scene, row: RowTerms, y: number): void {
  const { pattern, step, textureScale, top, style } = scene;
  const W = scene.frame.width;
  const tile = scene.tile!;
  for (let x = 0; x < W; x += step) pattern[x] = surfacePattern(style.surface, tile, top ? x * textureScale : (x - W / 2) * textureScale * row.zf, row.v, x, y);
  if (step === 2) for (let x = 1; x < W; x += 2) pattern[x] = x + 1 < W ? (pattern[x - 1]! + pattern[x + 1]!) / 2 : pattern[x - 1]!;
}

/** Wall and floor of one row (split wall, glow or spotlight, floor material and light) into scene.r/g/b. */
function shadeRow(scene: Scene, row: RowTerms): void {
  const { style, spot, top, tile, pattern, splitX, r: R, g: G, b: B } = scene;
  const { glowX, poolX, sideLight } = scene.columns;
  const { wall, floor, wallT, floorness, glowY, poolY, occlusion, detail } = row;
  const split = style.split;
  for (let x = 0, W = scene.frame.width; x < W; x++) {
    let r: number;
    let g: number;
    let b: number;
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
        // Positive pattern values lean to the pattern colour, negative ones to white.
        const t = p >= 0 ? (p > 1 ? 1 : p) : p < -1 ? 0.6 : -p * 0.6;
        const to = p >= 0 ? style.pattern : WHITE;
        fr += (to[0]! - fr) * t;
        fg += (to[1]! - fg) * t;
        fb += (to[2]! - fb) * t;
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
    R[x] = r;
    G[x] = g;
    B[x] = b;
  }
}

const WHITE = [255, 255, 255] as const;

/** The background lights layer over one shaded row: added light (mostly on the wall), then painted shapes. */
function lightRow(scene: Scene, row: RowTerms): void {
  const lights = scene.lights!;
  const { r: R, g: G, b: B } = scene;
  const L = lights.row;
  // Lights sit on the wall: the floor only catches a little of their glow.
  const onWall = 1 - row.floorness * 0.85;
  for (let x = 0, W = scene.frame.width; x < W; x++) {
    const li = lights.xi[x]!;
    const lt = lights.xt[x]!;
    if (lights.hasAdd) {
      const r = R[x]!,
        g = G[x]!,
        b = B[x]!;
      R[x] = r + (L[0]![li]! + (L[0]![li + 1]! - L[0]![li]!) * lt) * onWall * (1 - r / 255);
      G[x] = g + (L[1]![li]! + (L[1]![li + 1]! - L[1]![li]!) * lt) * onWall * (1 - g / 255);
      B[x] = b + (L[2]![li]! + (L[2]![li + 1]! - L[2]![li]!) * lt) * onWall * (1 - b / 255);
    }
    if (lights.hasOver) {
      const a = L[6]![li]! + (L[6]![li + 1]! - L[6]![li]!) * lt;
      if (a > 0.002) {
        R[x] = L[3]![li]! + (L[3]![li + 1]! - L[3]![li]!) * lt + R[x]! * (1 - a);
        G[x] = L[4]![li]! + (L[4]![li + 1]! - L[4]![li]!) * lt + G[x]! * (1 - a);
        B[x] = L[5]![li]! + (L[5]![li + 1]! - L[5]![li]!) * lt + B[x]! * (1 - a);
      }
    }
  }
}

/** Vignette and grain, then the row's opaque RGBA bytes. */
function writeRow(out: Uint8ClampedArray, scene: Scene, row: RowTerms, y: number): void {
  const { r: R, g: G, b: B } = scene;
  const { vigX } = scene.columns;
  const vignette = scene.style.vignette;
  for (let x = 0, W = scene.frame.width, i = y * W * 4; x < W; x++, i += 4) {
    const vig = 1 - vignette * (1 - vigX[x]! * row.vigY);
    const n = dither(x, y);
    out[i] = R[x]! * vig + n;
    out[i + 1] = G[x]! * vig + n;
    out[i + 2] = B[x]! * vig + n;
    out[i + 3] = 255;
  }
}

/**
 * A smooth row (no texture, no lights): the wall and floor colours are constant along it, and only the
 * glow, the key light's side and the vignette vary. Kept apart so the engine optimises this tight loop on
 * its own.
 */
function smoothRow(
  out: Uint8ClampedArray,
  row: number,
  W: number,
  y: number,
  wall: number[],
  floor: number[],
  wk: number,
  fk: number,
  wallGlow: number,
  floorGlow: number,
  vignette: number,
  vigY: number,
  glowX: Float32Array,
  sideLight: Float32Array,
  vigX: Float32Array,
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
