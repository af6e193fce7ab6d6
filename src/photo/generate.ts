/**
 * Running one product-photography request: load and check the inputs, then for each product (bounded
 * concurrency) ask the generator for the scene, fit it to the exact size, draw the logo and the texts,
 * encode the PNG, keep it (storage, the gallery), charge it, and record it in the usage ledger. A product that
 * fails is reported in its own item with its own code and its held credits go back; it never fails the others.
 *
 * @example
 * const inputs = await loadInputs(services, request);
 * const result = await generateItems(services, { userId, jobId }, request, await prepareInputs(services, inputs, needUrls));
 */
import { ApiError } from "../http/errors";
import type { PreparedLogo } from "./compose";
import type { Services } from "../services";
import { scenePromptFor } from "./catalog";
import { creditState, releaseItemHold, settleItem } from "./credits";
import { galleryInsert } from "./gallery";
import { recordGeneration } from "./ledger";
import { times } from "../lib/model-catalog";
import { loadInput, type LoadedImage, type PhotoRequest } from "./request";
import { GenerationError, type InputImage, type Price, type SceneRequest } from "./types";
import type { RgbaImage } from "../images/types";
import { closeItem, itemPrediction } from "./items";

export interface ItemError {
  code: string;
  message: string;
}

export interface Inputs {
  /** Per product: the checked image, or the error that product alone gets. */
  products: Array<InputImage | ItemError>;
  logo?: LoadedImage;
  reference?: InputImage;
}

/** What is kept of one item (in the job row): where its images are, or its error. */
export type StoredItem =
  | { index: number; label: string | null; status: "succeeded"; key: string | null; thumbKey: string | null; width: number; height: number }
  | { index: number; label: string | null; status: "failed"; error: ItemError };

export interface GenerationResult {
  output: "base64" | "url";
  /** One product: the contract's flat shape; several: `{images: [...]}`. */
  batch: boolean;
  items: StoredItem[];
  /** What the delivered images were charged. */
  cost: Price;
  /** What the failed items had held and got back (absent on results kept before credits existed). */
  refunded?: Price;
  /** The user's credit balance once the request's items were settled. */
  balance?: number;
}

/** File extension of each accepted input type, for storage keys. */
export const EXT = { "image/jpeg": "jpg", "image/png": "png", "image/webp": "webp" } as const;

/**
 * Loads logo and reference (a bad one fails the whole request: 422/413) and every product (a bad one
 * fails only its item in a batch, the request when it is the only one or when all are bad).
 */
export async function loadInputs(
  services: Services,
  request: PhotoRequest,
): Promise<{ products: Array<LoadedImage | ItemError>; logo?: LoadedImage; reference?: LoadedImage }> {
  const logo = request.logo ? await loadInput(services, request.logo, "logoImage") : undefined;
  const reference = request.reference ? await loadInput(services, request.reference, "referenceImage") : undefined;
  const products = await mapPool(request.products, 4, async (p, i): Promise<LoadedImage | ItemError> => {
    const field = `productImages.${i}.${p.source.startsWith("data:") ? "dataUrl" : "url"}`;
    try {
      return await loadInput(services, p.source, field);
    } catch (err) {
      if (request.products.length === 1 || !(err instanceof ApiError)) throw err;
      return { code: err.code, message: err.message };
    }
  });
  const failed = products.filter(isItemError);
  if (failed.length === products.length) {
    throw new ApiError("INVALID_IMAGE", `No product image could be used: ${failed.map((f) => f.message).join("; ")}`, {
      details: failed.map((f) => ({ path: f.message.split(":")[0]!, message: f.message })),
    });
  }
  return { products, logo, reference };
}

/**
 * Gives each input a URL of our storage when the generator needs one (Replicate fetches its inputs; the
 * local compositor does not), or when the job must be resumable (async). Inputs are the customer's own,
 * unpublished images: each gets a random name of its own (`inputKey`), so a result's public URL, which names
 * the job, leads to none of them.
 */
export async function prepareInputs(
  services: Services,
  loaded: { products: Array<LoadedImage | ItemError>; logo?: LoadedImage; reference?: LoadedImage },
  store: boolean,
): Promise<Inputs> {
  const keep = async (img: LoadedImage, _name: string): Promise<InputImage> => {
    if (!store) return { ...img, url: "" };
    const key = inputKey(img.mimeType);
    return { ...img, key, url: await services.storage.put(key, img.bytes, img.mimeType) };
  };
  return {
    products: await Promise.all(loaded.products.map((p, i) => (isItemError(p) ? p : keep(p, `product-${i}`)))),
    logo: loaded.logo,
    reference: loaded.reference ? await keep(loaded.reference, "reference") : undefined,
  };
}

/** A storage key for one input image: random, and unrelated to the job's id or its results' keys. */
export function inputKey(mimeType: keyof typeof EXT): string {
  return `photo/in/${crypto.randomUUID()}.${EXT[mimeType]}`;
}

export function isItemError(value: unknown): value is ItemError {
  return typeof value === "object" && value !== null && "code" in value && "message" in value && !("bytes" in value);
}

/**
 * Generates every product. Each image is kept (keepItem: storage, the gallery, its charge); a product that
 * fails has its hold released at once. For a base64 answer the PNGs also come back in `pngs`, so the answer
 * is written without reading them back.
 */
export async function generateItems(
  services: Services,
  ids: { userId: string; jobId: string },
  request: PhotoRequest,
  inputs: Inputs,
  options: { signal?: AbortSignal } = {},
): Promise<{ result: GenerationResult; pngs: Map<number, Uint8Array> }> {
  const logo = await prepareLogo(services, ids.userId, request, inputs.logo);
  const pngs = new Map<number, Uint8Array>();
  const concurrency = services.generator.name === "local" ? 1 : 4;
  const items = await mapPool(request.products, concurrency, async (product, index): Promise<StoredItem> => {
    const input = inputs.products[index]!;
    if (isItemError(input)) {
      await releaseItemHold(services.db, ids.jobId, index);
      return { index, label: product.label, status: "failed", error: input };
    }
    try {
      const sceneRequest = sceneRequestFor(request, input, inputs.reference, product.prompt);
      options.signal?.throwIfAborted();
      const predictions = services.generator.predictions;
      const scene = services.generator.heavyWork
        ? { local: sceneRequest }
        : predictions
          ? // The prediction's id is kept on the job's item first, so a retry with the same key picks it up.
            {
              image: await predictions.scene(
                await predictions.wait(await itemPrediction(services, ids.jobId, index, sceneRequest), options.signal),
                options.signal,
              ),
            }
          : { image: await services.generator.generateScene({ ...sceneRequest, signal: options.signal }) };
      const png = await composeScene(services, ids.userId, request, scene, logo);
      const kept = await keepItem(services, ids, request, index, product.label, png);
      if (request.output === "base64") pngs.set(index, png.bytes);
      if (predictions) await closeItem(services.db, ids.jobId, index, "succeeded", services.clock.now());
      return kept;
    } catch (err) {
      await releaseItemHold(services.db, ids.jobId, index);
      if (services.generator.predictions) await closeItem(services.db, ids.jobId, index, "failed", services.clock.now());
      return { index, label: product.label, status: "failed", error: itemErrorOf(services, err, ids.jobId, index) };
    }
  });
  return { result: resultOf(request, items, (await creditState(services.db, ids.userId)).balance), pngs };
}

/** The job's result from its items: the delivered ones' cost, what the failed ones got back, and the balance after. */
export function resultOf(request: PhotoRequest, items: StoredItem[], balance?: number): GenerationResult {
  const price = request.model.pricing[request.resolution]!;
  const made = items.filter((i) => i.status === "succeeded").length;
  return {
    output: request.output,
    batch: request.products.length > 1,
    items,
    cost: times(price, made),
    refunded: times(price, items.length - made),
    ...(balance === undefined ? {} : { balance }),
  };
}

/** The logo drawn at its size once per request (heavy work), or none. */
export async function prepareLogo(services: Services, userId: string, request: PhotoRequest, logo: LoadedImage | undefined): Promise<PreparedLogo | undefined> {
  if (!logo) return undefined;
  return services.heavy.run(userId, "photoLogo", {
    bytes: logo.bytes,
    canvas: { width: request.width, height: request.height },
    size: request.logoSize,
    limits: services.imageLimits,
  });
}

/** What the generator is asked for one product. */
export function sceneRequestFor(
  request: PhotoRequest,
  product: InputImage,
  reference: InputImage | undefined,
  productPrompt: string | undefined,
): SceneRequest {
  return {
    product,
    reference,
    prompt: scenePromptFor({ template: request.template, scenePrompt: request.scenePrompt, productPrompt, hasReference: !!reference }),
    templateId: request.template?.id,
    model: request.model,
    resolution: request.resolution,
    aspectRatio: request.aspectRatio,
    width: request.width,
    height: request.height,
  };
}

/**
 * One item as heavy work: the local compositor's scene made in it, or a provider's scene; then the exact
 * size, the logo and the texts.
 */
export async function composeScene(
  services: Services,
  userId: string,
  request: PhotoRequest,
  scene: { local: SceneRequest } | { image: RgbaImage },
  logo: PreparedLogo | undefined,
): Promise<{ bytes: Uint8Array; thumbnail: Uint8Array }> {
  return services.heavy.run(userId, "photoFinish", {
    scene,
    width: request.width,
    height: request.height,
    logo: logo && { image: logo, placement: request.logoPlacement, size: request.logoSize },
    texts: { overlayText: request.overlayText, marketingText: request.marketingText },
    textLayout: request.template?.textLayout,
    limits: services.imageLimits,
  });
}

/**
 * Keeps a finished item: its PNG and thumbnail in storage (under the job's and item's own keys, so doing it
 * twice writes the same objects), then its gallery item and its charge in one statement (credits.ts
 * settleItem), and its usage row; all keyed by (job, item), so an item finished twice is charged once.
 */
export async function keepItem(
  services: Services,
  ids: { userId: string; jobId: string },
  request: PhotoRequest,
  index: number,
  label: string | null,
  png: { bytes: Uint8Array; thumbnail: Uint8Array },
): Promise<Extract<StoredItem, { status: "succeeded" }>> {
  const key = `photo/out/${ids.jobId}/${index}.png`;
  const thumbKey = `photo/out/${ids.jobId}/${index}-thumb.jpg`;
  await services.storage.put(key, png.bytes, "image/png");
  await services.storage.put(thumbKey, png.thumbnail, "image/jpeg");
  const gallery = galleryInsert({
    userId: ids.userId,
    jobId: ids.jobId,
    itemIndex: index,
    label,
    templateId: request.template?.id ?? null,
    scenePrompt: request.scenePrompt ?? null,
    model: request.model.model,
    resolution: request.resolution,
    aspectRatio: request.aspectRatio,
    width: request.width,
    height: request.height,
    price: request.model.pricing[request.resolution]!,
    storageKey: key,
    thumbKey,
  });
  const charged = await settleItem(services.db, { jobId: ids.jobId, itemIndex: index, model: request.model.model, resolution: request.resolution }, gallery);
  if (charged === null) services.log.warn("photo item delivered without a new charge", { jobId: ids.jobId, index });
  await recordGeneration(services.db, {
    userId: ids.userId,
    jobId: ids.jobId,
    itemIndex: index,
    label,
    model: request.model,
    resolution: request.resolution,
    aspectRatio: request.aspectRatio,
    provider: services.generator.name,
  });
  return { index, label, status: "succeeded", key, thumbKey, width: request.width, height: request.height };
}

/** One product that failed, or a batch in which every product failed: the request as a whole failed. */
export function wholeFailure(result: GenerationResult): ItemError | null {
  const failed = result.items.filter((i): i is Extract<StoredItem, { status: "failed" }> => i.status === "failed");
  if (failed.length < result.items.length) return null;
  return failed.length === 1
    ? failed[0]!.error
    : { code: failed[0]!.error.code, message: failed.map((f) => `${f.label ?? `product ${f.index + 1}`}: ${f.error.message}`).join("; ") };
}

export function itemErrorOf(services: Services, err: unknown, jobId: string, index: number): ItemError {
  if (err instanceof GenerationError) return { code: err.code, message: err.message };
  if (err instanceof ApiError) return { code: err.code, message: err.message };
  services.log.error("photo item failed", { jobId, index, error: err instanceof Error ? `${err.name}: ${err.message}\n${err.stack ?? ""}` : String(err) });
  return { code: "GENERATION_FAILED", message: "This image could not be generated because of a failure on our side; retry the request." };
}

/** Maps with at most `limit` calls in flight, keeping the order. */
export async function mapPool<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
