/**
 * Picks area B's generator from configuration: Replicate when REPLICATE_API_TOKEN is set, otherwise the
 * local compositor (no account, no network).
 *
 * @example
 * const generator = createGenerator(config, { storage, log });
 */
import type { Config } from "../../config";
import type { DecodeLimits } from "../../images/limits";
import type { Logger, Storage } from "../../services";
import { LocalGenerator } from "../local";
import type { ImageGenerator } from "../types";
import { ReplicateGenerator } from "./replicate";

export interface GeneratorDeps {
  storage: Storage;
  log: Logger;
  /** The fetch Replicate's client uses (tests point it at the fake; default global fetch). */
  fetch?: typeof fetch;
  /** The deployment's decode limits (Services.imageLimits): which decoders read Replicate's outputs. */
  imageLimits?: DecodeLimits;
}

export function createGenerator(config: Config, deps: GeneratorDeps): ImageGenerator {
  if (!config.replicateApiToken) return LocalGenerator();
  return ReplicateGenerator({
    token: config.replicateApiToken,
    baseUrl: config.replicateApiBase,
    storage: deps.storage,
    log: deps.log,
    fetch: deps.fetch,
    imageLimits: deps.imageLimits,
    webhookSecret: config.replicateWebhookSecret,
  });
}
