/**
 * The two operations of area A behind the routes: make a code (payload per type, optional logo through the
 * shared image pipeline, render with the scan guarantee) and read one (image through the same pipeline).
 *
 * @example
 * const { png, warnings } = await generateQrCode(services, parseGenerateRequest(body));
 * const { decodedText } = await decodeQrCode(services, { base64: dataUri });
 */
import { ApiError, atField, forField } from "../http/errors";
import { loadImageBytes, sniffImage } from "../images";
import type { Services } from "../services";
import { parseHexColor } from "./colors";
import { buildPayload, type PayloadInput } from "./payloads";
import { renderQr, type RenderedQr } from "./render";
import type { DecodeRequest, Design } from "./schemas";
import { base64FromBytes } from "../lib/encoding";

/**
 * Builds the payload for the request's type and renders it. Throws ApiError 422 for content, design or
 * logo problems (the logo's own fetch/format errors name `logoUrl`). A code with a logo renders as heavy
 * work (`services.heavy`, counted against `userId`): the logo may be a large image.
 *
 * @example
 * const { png, warnings } = await generateQrCode(services, userId, parseGenerateRequest(body));
 */
export async function generateQrCode(services: Services, userId: string, request: PayloadInput & Design): Promise<RenderedQr> {
  const payload = buildPayload(request);
  const design = {
    size: request.size,
    fg: parseHexColor(request.fgColor),
    bg: parseHexColor(request.bgColor),
    transparent: request.isTransparent,
    logoSizeRatio: request.logoSizeRatio,
  };
  try {
    const logo = request.logoUrl
      ? await logoField(
          () => loadLogoBytes(services, request.logoUrl!),
          () => true,
        )
      : null;
    return logo
      ? await logoField(
          () => services.heavy.run(userId, "qrWithLogo", { payload, design, logo, limits: services.imageLimits }, [logo]),
          (err) => DECODE_ERRORS.has(err.code),
        )
      : await renderKept(payload, design);
  } catch (err) {
    // Content too long for a QR code: for url and text that is the `value` field itself.
    if (err instanceof ApiError && err.details?.[0]?.path === "payload" && (request.type === "url" || request.type === "text")) {
      throw new ApiError(err.code, err.message, { details: [{ ...err.details[0], path: "value" }] });
    }
    throw err;
  }
}

/**
 * Codes without a logo, kept once rendered (and scan-checked): the same code is asked for again and again (an
 * `<img>` on a shop's page), and its PNG depends only on the payload and the design. Settled renders only, so
 * no request waits on another's work (on the Worker a request may not finish another's promise). Bounded by
 * count and bytes; the least recently used go first. Per process on Node, per isolate on the Worker.
 */
const KEPT_CODES = 256;
const KEPT_BYTES = 4 * 1024 * 1024;
const kept = new Map<string, RenderedQr>();
let keptBytes = 0;

async function renderKept(payload: string, design: Parameters<typeof renderQr>[1]): Promise<RenderedQr> {
  const key = JSON.stringify([payload, design]);
  const known = kept.get(key);
  if (known) {
    kept.delete(key);
    kept.set(key, known);
    return { ...known, warnings: [...known.warnings] };
  }
  const rendered = await renderQr(payload, design);
  if (rendered.png.length <= KEPT_BYTES / 16 && !kept.has(key)) {
    kept.set(key, rendered);
    keptBytes += rendered.png.length;
    for (const [oldest, value] of kept) {
      if (kept.size <= KEPT_CODES && keptBytes <= KEPT_BYTES) break;
      kept.delete(oldest);
      keptBytes -= value.png.length;
    }
  }
  return { ...rendered, warnings: [...rendered.warnings] };
}

/** Fetches (or reads inline) the logo's bytes and checks they are an image we take. */
async function loadLogoBytes(services: Services, source: string): Promise<Uint8Array> {
  const bytes = source.startsWith("data:")
    ? await loadImageBytes(services.fetcher, { base64: source }, services.inlineImages)
    : await loadImageBytes(services.fetcher, { url: source });
  sniffImage(bytes, services.imageLimits);
  return bytes;
}

/** What decoding an image can throw (the render that follows it has its own errors: payload, scan). */
const DECODE_ERRORS = new Set<string>(["INVALID_IMAGE", "PAYLOAD_TOO_LARGE"]);

/** The logo's errors (those `isLogo` picks: fetch, format, decoding) name the `logoUrl` field. */
async function logoField<T>(fn: () => Promise<T>, isLogo: (err: ApiError) => boolean): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ApiError && isLogo(err)) throw atField(err, "logoUrl");
    throw err;
  }
}

/**
 * Reads the QR code in an image given by URL (safe fetch) or Base64 / data URI, as heavy work counted
 * against `userId`. 422 QR_NOT_FOUND when nothing decodes.
 *
 * @example
 * await decodeQrCode(services, userId, { url: "https://example.com/code.png" }); // { decodedText: "..." }
 */
export async function decodeQrCode(services: Services, userId: string, request: DecodeRequest): Promise<{ decodedText: string }> {
  const bytes = await forField(request.url ? "url" : "base64", async () => {
    const loaded = request.url
      ? await loadImageBytes(services.fetcher, { url: request.url })
      : await loadImageBytes(services.fetcher, { base64: request.base64! }, services.inlineImages);
    sniffImage(loaded, services.imageLimits);
    return loaded;
  });
  const text = await services.heavy.run(userId, "qrDecode", { bytes, limits: services.imageLimits }, [bytes]);
  if (text === null) {
    throw new ApiError(
      "QR_NOT_FOUND",
      "No QR code could be read in this image. Send a sharper or larger picture with the whole code visible, including the white margin around it.",
    );
  }
  return { decodedText: text };
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
