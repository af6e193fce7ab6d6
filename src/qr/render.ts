/**
 * Payload + design -> a PNG that scans.
 *
 * Without a logo: EC level M, the smallest version that holds the payload, drawn as a 1-bit palette PNG, its
 * bits confirmed by ZXing-C++ reading a 1 px/module rendering of the same matrix and colours.
 *
 * With a logo: EC level H. The codewords the logo destroys are counted per Reed-Solomon block (layout.ts)
 * and the smallest version whose every block keeps LOGO_DAMAGE_BUDGET of its correction in reserve for the
 * camera is used (growing the version spreads the logo over more codewords). When no version within the
 * limits does, the logo shrinks in steps of 0.02 until one does, and a warning names the ratio applied.
 * The result must then be read by both ZXing-C++ and jsQR from the check rendering, else it shrinks further.
 * A code that does not read is never returned.
 *
 * @example
 * const { png, warnings } = await renderQr("https://example.com", { size: 512, fg, bg, transparent: false, logoSizeRatio: 0.2 });
 */
import { ApiError, invalidField } from "../http/errors";
import { checkColors, type Rgb } from "./colors";
import { checkGeometry, drawCheckImage, drawPng, geometry, QUIET_ZONE, type DrawInput, type Geometry } from "./draw";
import { blockDamage, symbolLayout, type EcLevel } from "./layout";
import { logoShape, planLogo, type LogoPlan, type LogoShape } from "./logo";
import { loadJsQr } from "./jsqr";
import { encodeMatrix, minimalVersion, payloadBytes, type QrMatrix } from "./matrix";
import type { RgbaImage } from "../images/types";
import { readWithZxing, type ZxingImage } from "./zxing-loader";

export const MIN_SIZE = 64;
export const MAX_SIZE = 4096;
/** Pixels per module of the image the scan check decodes: a logo code is checked like a photo of it... */
export const CHECK_SCALE = 4;
/**
 * ...a plain code only needs its bits confirmed (colours are vetted by checkColors, geometry is fixed), which
 * ZXing's pure-symbol reader does cheaply from 1 px per module.
 */
const PLAIN_CHECK_SCALE = 1;
/** A logo may use at most this share of any block's correction capacity; the rest is left for the camera. */
export const LOGO_DAMAGE_BUDGET = 0.7;
/** Logo codes may grow by at most this many versions over the smallest that holds the payload. */
export const MAX_VERSION_BUMP = 10;
/** Module size floor when growing the version for a logo (smaller modules read badly from print). */
const MIN_LOGO_MODULE_PX = 2;
/** The smallest logo we shrink to before giving up (as a share of the symbol side). */
const MIN_LOGO_RATIO = 0.05;
/** Versions encoded per logo size to count their real damage (each costs a full encode). */
const EXACT_DAMAGE_TRIES = 3;
/** Scan checks per request before giving up on a logo. */
const MAX_LOGO_CHECKS = 6;

export interface QrDesign {
  /** Image side in pixels, MIN_SIZE..MAX_SIZE. */
  size: number;
  fg: Rgb;
  bg: Rgb;
  /** Background gets alpha 0, keeping bg's RGB. */
  transparent: boolean;
  /** Decoded logo, if any. */
  logo?: RgbaImage | null;
  /** Requested logo side / symbol side, 0.1..0.4. */
  logoSizeRatio: number;
}

export interface RenderedQr {
  png: Uint8Array;
  warnings: string[];
  version: number;
  ecLevel: EcLevel;
  /** Modules per side, without the quiet zone. */
  modules: number;
  /** Pixels per module in the PNG. */
  scale: number;
  /** The logo ratio actually used (absent without a logo). */
  logoRatio?: number;
}

/**
 * Renders `payload` as a PNG with the design; throws 422 (VALIDATION_FAILED for a payload or size that
 * cannot work, QR_NOT_SCANNABLE for colours or logos that cannot be made to scan).
 *
 * @example
 * const { png, warnings } = await renderQr("https://example.com", { size: 512, fg, bg, transparent: false, logoSizeRatio: 0.2 });
 */
export async function renderQr(payload: string, design: QrDesign): Promise<RenderedQr> {
  const warnings = checkColors(design.fg, design.bg);
  if (!Number.isInteger(design.size) || design.size < MIN_SIZE || design.size > MAX_SIZE) {
    throw invalidField("size", `must be a whole number of pixels from ${MIN_SIZE} to ${MAX_SIZE}`);
  }
  if (design.logo) return renderWithLogo(payload, design, design.logo, warnings);

  const version = minimalVersion(payload, "M");
  if (version === null) throw tooLong(payload, "M");
  const matrix = encodeMatrix(payload, { ecLevel: "M", version });
  const geo = geometry(design.size, matrix.size);
  requireFit(geo, matrix.size);
  if (!(await scans(drawCheckImage(drawInput(matrix, checkGeometry(matrix.size, PLAIN_CHECK_SCALE), design, null)), payload, false))) {
    throw new ApiError("QR_NOT_SCANNABLE", "The generated code did not decode in our scan check; try darker or more contrasting colours.");
  }
  return { png: drawPng(drawInput(matrix, geo, design, null)), warnings, version, ecLevel: "M", modules: matrix.size, scale: geo.scale };
}

/**
 * The drawing's input, every field written out in one literal: a spread (`{ ...base, geo }`) gave each
 * request's object a hidden class of its own, and the drawing code's reads of it went megamorphic.
 */
function drawInput(matrix: QrMatrix, geo: Geometry, design: QrDesign, logo: DrawInput["logo"]): DrawInput {
  return { matrix, geo, fg: design.fg, bg: design.bg, transparent: design.transparent, logo };
}

async function renderWithLogo(payload: string, design: QrDesign, logo: RgbaImage, warnings: string[]): Promise<RenderedQr> {
  const vmin = minimalVersion(payload, "H");
  if (vmin === null) throw tooLong(payload, "H");
  requireFit(geometry(design.size, vmin * 4 + 17), vmin * 4 + 17);
  let vmax = vmin;
  for (let v = vmin + 1; v <= Math.min(40, vmin + MAX_VERSION_BUMP); v++) {
    if (geometry(design.size, v * 4 + 17).scale >= MIN_LOGO_MODULE_PX) vmax = v;
  }
  const shape = logoShape(logo);
  const requested = design.logoSizeRatio;
  let checks = 0;
  for (let ratio = requested; ratio >= MIN_LOGO_RATIO - 1e-9; ratio = Math.round((ratio - 0.02) * 100) / 100) {
    const candidate = chooseVersion(payload, vmin, vmax, ratio, shape);
    if (!candidate) continue;
    const { matrix, plan } = candidate;
    const placed = { image: logo, plan };
    checks++;
    if (await scans(drawCheckImage(drawInput(matrix, checkGeometry(matrix.size, CHECK_SCALE), design, placed)), payload, true)) {
      if (ratio < requested - 1e-9) {
        warnings.push(
          `logoSizeRatio ${requested} would hide too much of this code to scan reliably; the logo was reduced to ${ratio.toFixed(2)} of the code's width. A shorter payload or a larger size leaves room for a bigger logo.`,
        );
      }
      const geo = geometry(design.size, matrix.size);
      return {
        png: drawPng(drawInput(matrix, geo, design, placed)),
        warnings,
        version: matrix.version,
        ecLevel: "H",
        modules: matrix.size,
        scale: geo.scale,
        logoRatio: ratio,
      };
    }
    if (checks >= MAX_LOGO_CHECKS) break;
  }
  throw new ApiError(
    "QR_NOT_SCANNABLE",
    "This logo cannot be embedded without making the code unreadable. Use a simpler logo, a larger size or a shorter payload, or leave out logoUrl.",
  );
}

/**
 * The smallest version in [vmin, vmax] whose blocks absorb the logo's damage within LOGO_DAMAGE_BUDGET,
 * with its matrix (logo modules cleared). The cheap upper bound (every codeword touched) settles most
 * versions; a few near misses are encoded to count only codewords that really lose a dark module.
 */
function chooseVersion(payload: string, vmin: number, vmax: number, ratio: number, shape: LogoShape): { matrix: QrMatrix; plan: LogoPlan } | null {
  const nearMisses: Array<{ plan: LogoPlan; version: number; share: number }> = [];
  for (let v = vmin; v <= vmax; v++) {
    const plan = planLogo(v * 4 + 17, ratio, shape);
    const damage = blockDamage(symbolLayout(v, "H"), plan.cleared);
    if (damage.touchesCritical) continue;
    if (damage.worstShare <= LOGO_DAMAGE_BUDGET) return { matrix: clear(encodeMatrix(payload, { ecLevel: "H", version: v }), plan), plan };
    if (damage.worstShare <= LOGO_DAMAGE_BUDGET * 1.5) nearMisses.push({ plan, version: v, share: damage.worstShare });
  }
  nearMisses.sort((a, b) => a.share - b.share);
  for (const { plan, version } of nearMisses.slice(0, EXACT_DAMAGE_TRIES)) {
    const matrix = encodeMatrix(payload, { ecLevel: "H", version });
    if (blockDamage(symbolLayout(version, "H"), plan.cleared, matrix.modules).worstShare <= LOGO_DAMAGE_BUDGET) return { matrix: clear(matrix, plan), plan };
  }
  return null;
}

function clear(matrix: QrMatrix, plan: LogoPlan): QrMatrix {
  for (let i = 0; i < plan.cleared.length; i++) if (plan.cleared[i]) matrix.modules[i] = 0;
  return matrix;
}

function requireFit(geo: { scale: number }, n: number): void {
  if (geo.scale >= 1) return;
  const side = n + 2 * QUIET_ZONE;
  throw invalidField(
    "size",
    `is too small for this content: the code is ${side} modules wide with its quiet zone, so size must be at least ${side} (3x that or more reads better)`,
  );
}

function tooLong(payload: string, ecLevel: EcLevel): ApiError {
  const max = ecLevel === "H" ? 1273 : 2331;
  const bytes = payloadBytes(payload);
  return new ApiError(
    "VALIDATION_FAILED",
    `The content is ${bytes} bytes; a QR code at error-correction level ${ecLevel} holds at most ${max} bytes${ecLevel === "H" ? " (a logo needs level H)" : ""}. Shorten it.`,
    { details: [{ path: "payload", message: `is ${bytes} bytes, at most ${max} fit` }] },
  );
}

const utf8 = new TextEncoder();

/** True when the check image decodes to exactly the payload's bytes (ZXing-C++; with `strict`, jsQR too). */
async function scans(image: ZxingImage, payload: string, strict: boolean): Promise<boolean> {
  const expected = utf8.encode(payload);
  const [result] = await readWithZxing(image, {
    formats: ["QRCode"],
    isPure: !strict,
    tryHarder: strict,
    tryRotate: false,
    tryInvert: false,
    tryDownscale: false,
    maxNumberOfSymbols: 1,
  });
  if (!result || !sameBytes(result.bytes, expected)) return false;
  if (!strict) return true;
  const jsQR = await loadJsQr();
  // Options on every call: jsQR 1.4 keeps the last call's options as module-wide defaults.
  const js = jsQR(image.data, image.width, image.height, { inversionAttempts: "dontInvert" });
  return js !== null && sameBytes(Uint8Array.from(js.binaryData), expected);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
