/**
 * Colours of a QR code: parsing `#RGB` / `#RRGGBB`, and the contrast rules that decide whether phones can
 * read a colour pair. The thresholds follow what common decoders read: every decoder
 * read 3.48:1 (#00a000 on white); jsQR and @paulmillr/qr failed at 2.61:1; light modules on a dark
 * background are skipped by several scanners.
 *
 * @example
 * const fg = parseHexColor("#1a73e8"); // { r: 26, g: 115, b: 232 }
 * contrastRatio(fg, parseHexColor("#fff")); // 4.5
 */
import { ApiError } from "../http/errors";

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

export const HEX_COLOR = /^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/;

/** Below this contrast ratio a code is refused: common decoders fail at 2.61:1 and all read 3.48:1. */
export const MIN_CONTRAST = 3;
/** Below this ratio the code is made but a warning says so (ISO 15415 grades drop; print makes it worse). */
export const WARN_CONTRAST = 4;

/**
 * Parses `#RGB` or `#RRGGBB` (any case).
 *
 * @example
 * parseHexColor("#0af"); // { r: 0, g: 170, b: 255 }
 */
export function parseHexColor(value: string): Rgb {
  if (!HEX_COLOR.test(value)) throw new RangeError(`not a #RGB or #RRGGBB colour: ${value}`);
  const hex = value.length === 4 ? [...value.slice(1)].map((c) => c + c).join("") : value.slice(1);
  return { r: parseInt(hex.slice(0, 2), 16), g: parseInt(hex.slice(2, 4), 16), b: parseInt(hex.slice(4, 6), 16) };
}

/**
 * @example
 * formatHex({ r: 26, g: 115, b: 232 }); // "#1A73E8"
 */
export function formatHex({ r, g, b }: Rgb): string {
  return `#${[r, g, b]
    .map((n) => n.toString(16).padStart(2, "0"))
    .join("")
    .toUpperCase()}`;
}

/**
 * WCAG 2 relative luminance, 0 (black) .. 1 (white).
 *
 * @example
 * relativeLuminance({ r: 255, g: 255, b: 255 }); // 1
 */
export function relativeLuminance({ r, g, b }: Rgb): number {
  const channel = (v: number) => {
    const s = v / 255;
    return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

/**
 * WCAG 2 contrast ratio, 1 .. 21.
 *
 * @example
 * contrastRatio({ r: 0, g: 0, b: 0 }, { r: 255, g: 255, b: 255 }); // 21
 */
export function contrastRatio(a: Rgb, b: Rgb): number {
  const la = relativeLuminance(a);
  const lb = relativeLuminance(b);
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/**
 * Refuses colour pairs that scanners cannot read (422 QR_NOT_SCANNABLE, saying why and what to change) and
 * returns warnings for pairs that read on screens but are weak in print.
 *
 * @example
 * checkColors(parseHexColor("#000"), parseHexColor("#fff")); // []
 */
export function checkColors(fg: Rgb, bg: Rgb): string[] {
  const ratio = contrastRatio(fg, bg);
  const shown = `${ratio.toFixed(2)}:1`;
  if (relativeLuminance(fg) > relativeLuminance(bg)) {
    throw new ApiError(
      "QR_NOT_SCANNABLE",
      `fgColor ${formatHex(fg)} is lighter than bgColor ${formatHex(bg)}: light modules on a dark background (inverted codes) are not read by many phone scanners. Use a dark fgColor on a light bgColor, e.g. swap the two colours.`,
      { details: [{ path: "fgColor", message: "must be darker than bgColor" }] },
    );
  }
  if (ratio < MIN_CONTRAST) {
    throw new ApiError(
      "QR_NOT_SCANNABLE",
      `The contrast between fgColor ${formatHex(fg)} and bgColor ${formatHex(bg)} is ${shown}; scanners need at least ${MIN_CONTRAST}:1 (4.5:1 or more recommended). Use a darker fgColor or a lighter bgColor.`,
      { details: [{ path: "fgColor", message: `contrast with bgColor is ${shown}, needs at least ${MIN_CONTRAST}:1` }] },
    );
  }
  if (ratio < WARN_CONTRAST) {
    return [`The contrast between fgColor and bgColor is ${shown}; it scans on screens, but ${WARN_CONTRAST}:1 or more is safer for print.`];
  }
  return [];
}
