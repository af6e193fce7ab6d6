/**
 * Area B's shared types: the request as validated, the model catalogue, and the port every image
 * generator implements (Replicate on the edge, the local compositor when embedded).
 */
import type { RgbaImage } from "../images";

export const MODEL_SLUGS = ["pro", "standard", "flash"] as const;
export type ModelSlug = (typeof MODEL_SLUGS)[number];

export const RESOLUTIONS = ["1K", "2K", "4K"] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

/** The long edge of the output, in pixels, for each resolution. */
export const LONG_EDGE: Record<Resolution, number> = { "1K": 1024, "2K": 1536, "4K": 2048 };

export const ASPECT_RATIOS = ["1:1", "4:3", "3:4", "16:9", "9:16", "4:5", "3:2", "2:3", "21:9"] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];

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

/** Money for one image at one resolution. usd and inr are exact decimal strings ("0.1500", "12.45"). */
export interface Price {
  credits: number;
  usd: string;
  inr: string;
}

/** One image model as configured (ids and prices come from configuration, not code). */
export interface ModelOption {
  model: ModelSlug;
  /** Provider-side id, e.g. "google/nano-banana-pro". */
  modelId: string;
  name: string;
  provider: string;
  description: string;
  badge: string;
  supportedResolutions: Resolution[];
  maxBatchSize: number;
  defaultResolution: Resolution;
  /** Price per image for each supported resolution. */
  pricing: Partial<Record<Resolution, Price>>;
  /** What the provider's own `resolution` input is for each of ours (e.g. our 4K = 2048 px is the model's "2K"). */
  providerResolution?: Partial<Record<Resolution, string>>;
}

/** One input image, already loaded, sniffed and limit-checked. */
export interface InputImage {
  bytes: Uint8Array;
  mimeType: "image/jpeg" | "image/png" | "image/webp";
  width: number;
  height: number;
  /** A URL of this service's own storage that serves the bytes (what Replicate is given); "" when not stored. */
  url: string;
  /** The storage key behind `url`, when stored. */
  key?: string;
}

/** What a generator is asked for: one product in one scene, at an exact size. */
export interface SceneRequest {
  product: InputImage;
  reference?: InputImage;
  /** The full scene description: the template's prompt, the user's scenePrompt, the product's own prompt. */
  prompt: string;
  /** The template, when the request named one (the local compositor styles its backdrop from it). */
  templateId?: string;
  model: ModelOption;
  resolution: Resolution;
  aspectRatio: AspectRatio;
  /** Exact output size in pixels (long edge from the resolution, the other from the aspect ratio). */
  width: number;
  height: number;
  /** Aborted when the caller gives up (timeout, shutdown). */
  signal?: AbortSignal;
}

/**
 * The image-generator port. A generator makes the scene only; the logo and the texts are composited by
 * the service afterwards, so no model ever redraws them. The result may be any size: the caller fits it to
 * `width` x `height` exactly (cover crop) when it is not.
 */
export interface ImageGenerator {
  readonly name: "local" | "replicate";
  /**
   * The local compositor's mark: its scenes are pure CPU work, made inside the heavy-work task
   * (HEAVY_TASKS.photoFinish, on a worker thread on Node) rather than by calling generateScene here.
   */
  readonly heavyWork?: true;
  generateScene(request: SceneRequest): Promise<RgbaImage>;
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
