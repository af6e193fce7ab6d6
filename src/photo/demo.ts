/**
 * Each template's demo image: the demo product (a render drawn in code) put into the template's scene by
 * the local compositor, whatever generator the deployment uses, so the catalogue never costs a model call.
 * Made on first request, kept in storage under a versioned key, and shared by concurrent first requests.
 *
 * @example
 * const { bytes } = await demoImage(services, "hol-diwali");
 */
import { ApiError } from "../http/errors";
import type { Services } from "../services";
import { findTemplate, scenePromptFor } from "./catalog";

/** Bump when the compositor's look changes, so caches and storage take the new images. */
export const DEMO_VERSION = 2;
const SIZE = 640;

/**
 * Renders in progress, per Services: on Node one Services serves the process, so concurrent first requests
 * share one render; on the Worker each request has its own, so no request waits on another request's
 * work (which would never finish if that request were cancelled).
 */
const inFlightBy = new WeakMap<Services, Map<string, Promise<Uint8Array>>>();

export async function demoImage(services: Services, templateId: string): Promise<{ bytes: Uint8Array; version: number }> {
  const template = findTemplate(templateId);
  if (!template) throw new ApiError("TEMPLATE_NOT_FOUND", `No template "${templateId}".`);
  const key = `photo/demo/v${DEMO_VERSION}/${templateId}.png`;
  const stored = await services.storage.get(key);
  if (stored) return { bytes: stored.bytes, version: DEMO_VERSION };
  let inFlight = inFlightBy.get(services);
  if (!inFlight) inFlightBy.set(services, (inFlight = new Map()));
  const pending = inFlight;
  let making = pending.get(key);
  if (!making) {
    making = (async () => {
      // Heavy work like any image, in one queue for all visitors of the public catalogue.
      const png = await services.heavy.run("public:demo-images", "photoDemo", {
        templateId,
        prompt: scenePromptFor({ template, hasReference: false }),
        model: services.config.photoModels.models[0]!,
        size: SIZE,
      });
      await services.storage.put(key, png, "image/png");
      return png;
    })().finally(() => pending.delete(key));
    pending.set(key, making);
  }
  return { bytes: await making, version: DEMO_VERSION };
}
