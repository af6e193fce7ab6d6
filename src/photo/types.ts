/**
 * Area B's shared types: the request as validated, the model catalogue, and the port every image
 * generator implements (Replicate on the edge, the local compositor when embedded). The catalogue's words
 * live in src/lib/model-catalog.ts and the generator port in src/services.ts, both below the areas; they
 * are re-exported here for area B's modules.
 */
export { ASPECT_RATIOS, MODEL_SLUGS, RESOLUTIONS, type AspectRatio, type ModelOption, type ModelSlug, type Price, type Resolution } from "../lib/model-catalog";
export type { ImageGenerator, InputImage, SceneRequest } from "../services";
import type { Resolution } from "../lib/model-catalog";

/** The long edge of the output, in pixels, for each resolution. */
export const LONG_EDGE: Record<Resolution, number> = { "1K": 1024, "2K": 1536, "4K": 2048 };

export const LOGO_PLACEMENTS = [
  "top-left",
  "top-center",
  "top-right",
  "center-left",
  "center",
  "center-right",
  "bottom-left",
  "bottom-center",
  "bottom-right",
] as const;
export type LogoPlacement = (typeof LOGO_PLACEMENTS)[number];

/** A scene family of the catalogue. */
export type CategoryId = "studio" | "lifestyle" | "outdoor" | "holiday" | "ecommerce";

/** One scene template. `prompt` stays on the server; the list endpoint never shows it. */
export interface SceneTemplate {
  id: string;
  title: string;
  categoryId: CategoryId;
  prompt: string;
  /** Where the service draws the texts: in bands at the top and bottom (default), or in open space on the left. */
  textLayout?: "bands" | "copy-left";
}

/**
 * A generator failure that belongs to one product (reported in that item of a batch, never a 500).
 * `code` is an ApiError code; `retryable` says whether the same request may succeed later.
 */
export class GenerationError extends Error {
  override readonly name = "GenerationError";
  constructor(
    readonly code: "GENERATION_FAILED" | "GENERATION_TIMEOUT" | "GENERATION_REFUSED" | "UPSTREAM_RATE_LIMITED" | "UPSTREAM_UNAVAILABLE",
    message: string,
    readonly retryable = false,
  ) {
    super(message);
  }
}
