/**
 * The two operations of area A behind the routes: make a code (payload per type, optional logo through the
 * shared image pipeline, render with the scan guarantee) and read one (image through the same pipeline).
 *
 * @example
 * const { png, warnings } = await generateQrCode(services, parseGenerateRequest(body));
 * const { decodedText } = await decodeQrCode(services, { base64: dataUri });
 */
import { ApiError } from "../http/errors";
import { decodeImage, loadImageBytes, sniffImage } from "../images";
import type { Services } from "../services";
import { parseHexColor } from "./colors";
import { decodeQrImage } from "./decode";
import { buildPayload, type PayloadInput } from "./payloads";
import { resizeRgba, type RgbaImage } from "./raster";
import { renderQr, type RenderedQr } from "./render";
import type { DecodeRequest, Design } from "./schemas";
import { base64FromBytes } from "../lib/encoding";

/**
 * Builds the payload for the request's type and renders it. Throws ApiError 422 for content, design or
 * logo problems (the logo's own fetch/format errors name `logoUrl`).
 *
 * @example
 * const { png, warnings } = await generateQrCode(services, parseGenerateRequest(body));
 */
export async function generateQrCode(services: Services, request: PayloadInput & Design): Promise<RenderedQr & { payload: string }> {
  const payload = buildPayload(request);
  const logo = request.logoUrl ? await loadLogo(services, request.logoUrl, request.logoSizeRatio, request.size) : null;
  try {
    const rendered = await renderQr(payload, {
      size: request.size,
      fg: parseHexColor(request.fgColor),
      bg: parseHexColor(request.bgColor),
      transparent: request.isTransparent,
      logo,
      logoSizeRatio: request.logoSizeRatio,
    });
    return { ...rendered, payload };
  } catch (err) {
    // Content too long for a QR code: for url and text that is the `value` field itself.
    if (err instanceof ApiError && err.details?.[0]?.path === "payload" && (request.type === "url" || request.type === "text")) {
      throw new ApiError(err.code, err.message, { details: [{ ...err.details[0], path: "value" }] });
    }
    throw err;
  }
}

/**
 * Fetches (or reads inline) and decodes a logo, then shrinks it to no more than the code can show, so a
 * 20 MP logo costs one reduction instead of one per layout the renderer tries.
 */
async function loadLogo(services: Services, source: string, ratio: number, size: number): Promise<RgbaImage> {
  let image: RgbaImage;
  try {
    const bytes = source.startsWith("data:")
      ? await loadImageBytes(services.fetcher, { base64: source })
      : await loadImageBytes(services.fetcher, { url: source });
    sniffImage(bytes);
    image = decodeImage(bytes);
  } catch (err) {
    if (err instanceof ApiError) {
      throw new ApiError(err.code, `logoUrl: ${err.message}`, { details: [{ path: "logoUrl", message: err.message }], cause: err });
    }
    throw err;
  }
  // The logo box is at most ratio x size; the scan check renders at up to ~1000 px.
  const needed = Math.ceil(ratio * Math.max(size, 1024));
  const longest = Math.max(image.width, image.height);
  if (longest <= needed * 1.5) return image;
  const scale = needed / longest;
  return resizeRgba(image, Math.max(1, Math.round(image.width * scale)), Math.max(1, Math.round(image.height * scale)));
}

/**
 * Reads the QR code in an image given by URL (safe fetch) or Base64 / data URI. 422 QR_NOT_FOUND when
 * nothing decodes.
 *
 * @example
 * await decodeQrCode(services, { url: "https://example.com/code.png" }); // { decodedText: "..." }
 */
export async function decodeQrCode(services: Services, request: DecodeRequest): Promise<{ decodedText: string }> {
  const bytes = request.url
    ? await loadImageBytes(services.fetcher, { url: request.url })
    : await loadImageBytes(services.fetcher, { base64: request.base64! });
  sniffImage(bytes);
  const image = decodeImage(bytes);
  const result = await decodeQrImage(image);
  if (!result) {
    throw new ApiError(
      "QR_NOT_FOUND",
      "No QR code could be read in this image. Send a sharper or larger picture with the whole code visible, including the white margin around it.",
    );
  }
  return { decodedText: result.text };
}

/**
 * `data:image/png;base64,...` without Node's Buffer (runs in workerd).
 *
 * @example
 * pngDataUrl(png); // "data:image/png;base64,iVBORw0KGgo..."
 */
export function pngDataUrl(png: Uint8Array): string {
  return `data:image/png;base64,${base64FromBytes(png)}`;
}
