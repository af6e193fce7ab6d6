/**
 * From a schema-valid body to a resolved request: defaults applied (model pro, its highest resolution,
 * 1:1, bottom-right logo at 0.15, base64 output), and the rules that need the configured catalogue checked,
 * each a 422 naming its field. Then the images: loaded through the shared pipeline (safe fetch or Base64),
 * sniffed (JPEG, PNG or WebP by their bytes, never by a name) and limit-checked before anything is decoded.
 *
 * @example
 * const request = resolveRequest(body, config.photoModels);
 * const logo = request.logo ? await loadInput(services, request.logo, "logoImage") : undefined;
 */
import { forField, invalidField } from "../http/errors";
import { canonicalJson, sha256Hex } from "../lib/encoding";
import { withImageDigests, type InlineImages } from "../http/inline-images";
import { loadImageBytes, sniffImage } from "../images";
import type { Services } from "../services";
import { findTemplate } from "./catalog";
import { unsupportedCharacters } from "./text";
import type { ModelCatalog } from "../lib/model-catalog";
import type { PhotoRequestBody } from "./schemas";
import { LONG_EDGE, type AspectRatio, type LogoPlacement, type ModelOption, type Resolution, type SceneTemplate } from "./types";

export interface ProductSpec {
  /** A data URI or an https URL. */
  source: string;
  label: string | null;
  prompt?: string;
}

export interface PhotoRequest {
  products: ProductSpec[];
  template?: SceneTemplate;
  scenePrompt?: string;
  logo?: string;
  logoPlacement: LogoPlacement;
  logoSize: number;
  reference?: string;
  overlayText?: string;
  marketingText?: string;
  model: ModelOption;
  resolution: Resolution;
  aspectRatio: AspectRatio;
  output: "base64" | "url";
  width: number;
  height: number;
}

export function resolveRequest(body: PhotoRequestBody, catalog: ModelCatalog): PhotoRequest {
  const template = body.promptId === undefined ? undefined : findTemplate(body.promptId);
  if (body.promptId !== undefined && !template) {
    throw invalidField("promptId", `"${body.promptId}" is not a template id; GET /api/image/product-photography-prompts lists them`);
  }
  const model = catalog.get(body.model ?? "pro");
  if (!model) throw invalidField("model", `"${body.model}" is not offered; GET /api/image/image-model-options lists the models`);
  const resolution = body.resolution ?? model.defaultResolution;
  if (!model.supportedResolutions.includes(resolution)) {
    throw invalidField("resolution", `model ${model.model} supports ${model.supportedResolutions.join(", ")}, not ${resolution}`);
  }
  if (body.productImages.length > model.maxBatchSize) {
    throw invalidField(
      "productImages",
      `model ${model.model} takes at most ${model.maxBatchSize} product images per request, got ${body.productImages.length}`,
    );
  }
  const aspectRatio = body.aspectRatio ?? "1:1";
  const { width, height } = outputSize(resolution, aspectRatio);
  return {
    products: body.productImages.map((p) => ({ source: (p.dataUrl ?? p.url)!, label: p.label ?? null, prompt: p.prompt })),
    template,
    scenePrompt: body.scenePrompt,
    logo: body.logoImage,
    logoPlacement: body.logoPlacement ?? "bottom-right",
    logoSize: body.logoSize ?? 0.15,
    reference: body.referenceImage,
    overlayText: body.overlayText,
    marketingText: body.marketingText,
    model,
    resolution,
    aspectRatio,
    output: body.outputResult ?? "base64",
    width,
    height,
  };
}

/**
 * Exact pixels: the long edge from the resolution, the short edge from the ratio, rounded up. An image is
 * then never more elongated than its named ratio, so a 4:5 photo (819.2 px wide at 1K) is 820 wide and
 * within photoplatform's 4:5 bound, which a platform compares exactly.
 *
 * @example
 * outputSize("2K", "16:9"); // { width: 1536, height: 864 }
 * outputSize("1K", "4:5"); // { width: 820, height: 1024 }
 */
export function outputSize(resolution: Resolution, aspectRatio: AspectRatio): { width: number; height: number } {
  const [w, h] = aspectRatio.split(":").map(Number) as [number, number];
  const long = LONG_EDGE[resolution];
  return w >= h ? { width: long, height: Math.ceil((long * h) / w) } : { width: Math.ceil((long * w) / h), height: long };
}

/**
 * Texts are drawn by the service with its shipped fonts (Latin, Devanagari, ₹): a character none of them
 * has would come out as an empty box, so it is refused up front, naming the field and the characters.
 */
export async function checkDrawable(request: PhotoRequest): Promise<void> {
  for (const [field, text, weight] of [
    ["overlayText", request.overlayText, 700],
    ["marketingText", request.marketingText, 400],
  ] as const) {
    if (!text) continue;
    const missing = await unsupportedCharacters(text, weight);
    if (missing.length) {
      throw invalidField(
        field,
        `cannot be drawn: ${missing
          .slice(0, 5)
          .map((c) => `"${c}"`)
          .join(", ")} (the fonts cover Latin and Devanagari text, digits, punctuation and ₹)`,
      );
    }
  }
}

export interface LoadedImage {
  bytes: Uint8Array;
  mimeType: "image/jpeg" | "image/png" | "image/webp";
  width: number;
  height: number;
}

const MIME = { jpeg: "image/jpeg", png: "image/png", webp: "image/webp" } as const;

/**
 * Loads one image given as a data URI or an https URL; errors keep their code (422 INVALID_IMAGE,
 * INVALID_IMAGE_URL, 413) and name `field` in the message.
 */
export async function loadInput(services: Services, source: string, field: string): Promise<LoadedImage> {
  return forField(field, async () => {
    const bytes = await loadImageBytes(services.fetcher, source.startsWith("data:") ? { dataUri: source } : { url: source }, services.inlineImages);
    const info = sniffImage(bytes, services.imageLimits);
    return { bytes, mimeType: MIME[info.format], width: info.width, height: info.height };
  });
}

/** Strings longer than this (inline images) enter the fingerprint as their own digest. */
const DIGESTED_STRING = 64 * 1024;

/**
 * The idempotency fingerprint of a request: SHA-256 of its canonical JSON, in which an inline image read as
 * the body streamed in stands as the digest of its bytes (or its error), and every other string longer than
 * 64 KiB as the digest of its own text. The canonical JSON of a 13 MB data URI would otherwise be built,
 * joined and encoded whole: three more copies of it at once.
 *
 * @example
 * const fingerprint = await requestFingerprint({ body, async: false }, services.inlineImages);
 */
export async function requestFingerprint(value: unknown, inline?: InlineImages): Promise<string> {
  return sha256Hex(canonicalJson(await digestLongStrings(await withImageDigests(value, inline))));
}

async function digestLongStrings(value: unknown): Promise<unknown> {
  if (typeof value === "string") return value.length > DIGESTED_STRING ? `sha256:${await sha256Hex(value)}` : value;
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return Promise.all(value.map(digestLongStrings));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) out[k] = await digestLongStrings(v);
  return out;
}
