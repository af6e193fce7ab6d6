/**
 * Pure mapping from a SceneRequest to a Replicate prediction: which route (official model or version), the
 * model input, and how a finished prediction's output and error read. No I/O here, so it is unit-testable.
 *
 * @example
 * const target = predictionTarget("google/nano-banana-pro"); // { model: "google/nano-banana-pro" }
 * const input = sceneInput(request); // { prompt, image_input: [productUrl], aspect_ratio, resolution, output_format }
 */
import { GenerationError, type SceneRequest } from "../types";
import { imageFormat, mimeTypeOf } from "../../images/sniff";

/** Where a prediction is created: `model` uses the official-model route, `version` the versioned one. */
export type PredictionTarget = { model: string } | { version: string };

const MODEL_ID = /^([\w.-]+\/[\w.-]+)(?::([0-9a-f]{16,128}))?$/i;

/**
 * "owner/name" → `{ model }` (POST /v1/models/{owner}/{name}/predictions); "owner/name:version" →
 * `{ version }` (POST /v1/predictions). A malformed id is a configuration fault: GENERATION_FAILED.
 *
 * @example
 * predictionTarget("acme/photo:5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa"); // { version: "5c7d…" }
 */
export function predictionTarget(modelId: string): PredictionTarget {
  const match = MODEL_ID.exec(modelId);
  if (!match)
    throw new GenerationError(
      "GENERATION_FAILED",
      "The selected model is misconfigured on this service (its model id is not owner/name or owner/name:version).",
    );
  return match[2] ? { version: match[2] } : { model: match[1]! };
}

/**
 * Tells the model which input image is which. The logo and the texts are composited by the service after
 * the scene is made, so the model is told to draw none: models garble lettering they try to reproduce.
 *
 * @example
 * scenePrompt(request); // "<scene>\n\nImage 1 is the product photo. Keep the product exactly as it is: ..."
 */
export function scenePrompt(request: SceneRequest): string {
  const lines = [
    request.prompt.trim(),
    "",
    "Image 1 is the product photo. Keep the product exactly as it is: the same shape, proportions, colours, materials and label text; do not redraw, restyle or retouch the product itself, only place it in the scene.",
  ];
  if (request.reference) {
    lines.push("Image 2 is a style reference only: take its lighting, colour palette and composition, but none of its objects, people or text.");
  }
  lines.push("Do not add any text, lettering, captions, watermarks or logos anywhere in the image.");
  return lines.join("\n");
}

/**
 * The model input. Images go as URLs of our own storage (product first, then reference), never as bytes, so
 * the client uploads nothing. `resolution` is sent only for models configured with `providerResolution`,
 * mapped to the model's own name for it (our "4K" = 2048 px may be the model's "2K").
 *
 * @example
 * sceneInput({ ...request, resolution: "4K", model: { ...pro, providerResolution: { "4K": "2K" } } }).resolution; // "2K"
 */
export function sceneInput(request: SceneRequest): Record<string, unknown> {
  const images = [request.product.url];
  if (request.reference) images.push(request.reference.url);
  const input: Record<string, unknown> = {
    prompt: scenePrompt(request),
    image_input: images,
    aspect_ratio: request.aspectRatio,
    output_format: "png",
  };
  const mapping = request.model.providerResolution;
  if (mapping) input.resolution = mapping[request.resolution] ?? request.resolution;
  return input;
}

/**
 * The first output URL of a finished prediction: the output is one URL string or an array of them.
 *
 * @example
 * outputUrl(["https://replicate.delivery/xezq/a.png"]); // "https://replicate.delivery/xezq/a.png"
 */
export function outputUrl(output: unknown): string | null {
  const first = Array.isArray(output) ? output.find((item) => typeof item === "string") : output;
  if (typeof first !== "string") return null;
  try {
    const url = new URL(first);
    return url.protocol === "https:" || url.protocol === "http:" ? url.href : null;
  } catch {
    return null;
  }
}

const REFUSAL = /safety|prohibited|nsfw|sensitive|flagged|blocked by|content polic/i;

/**
 * True when a prediction's error text is a safety-filter refusal rather than a fault.
 *
 * @example
 * isRefusal("The output was flagged as sensitive (E005)"); // true
 */
export function isRefusal(errorText: string): boolean {
  return REFUSAL.test(errorText);
}

/**
 * A prediction's `error` as short text for our logs (never shown to the caller).
 *
 * @example
 * log.warn("replicate prediction not succeeded", { error: errorText(prediction.error) });
 */
export function errorText(error: unknown): string {
  if (error == null) return "";
  const text = typeof error === "string" ? error : JSON.stringify(error);
  return text.slice(0, 300);
}

/**
 * Maps a failed prediction to the error the caller sees, in words, without provider internals.
 *
 * @example
 * throw failureError(prediction.error); // GENERATION_REFUSED or GENERATION_FAILED
 */
export function failureError(error: unknown): GenerationError {
  if (isRefusal(errorText(error))) {
    return new GenerationError(
      "GENERATION_REFUSED",
      "The image model's safety filter refused this scene; change the prompt, the product image or the reference image and try again.",
    );
  }
  return new GenerationError("GENERATION_FAILED", "The image model could not make this scene; try again, or change the prompt.", true);
}

/**
 * Image format by magic bytes, for the stored raw copy's key and content type.
 *
 * @example
 * rawFormat(pngBytes); // { ext: "png", contentType: "image/png" }
 */
export function rawFormat(bytes: Uint8Array): { ext: string; contentType: string } | null {
  const format = imageFormat(bytes);
  if (!format) return null;
  return { ext: format === "jpeg" ? "jpg" : format, contentType: mimeTypeOf(format) };
}
