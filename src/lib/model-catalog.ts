/**
 * Area B's image models and their prices, and the words a photo request is made of (model slugs,
 * resolutions, aspect ratios). It is data read at start, like every other setting, so it sits in the lowest
 * layer: src/config.ts parses the catalogue with it, and src/photo builds on it. Ids, prices per resolution, the USD->INR rate and credits per USD are
 * configuration: `config/photo-models.json` holds the defaults, the `PHOTO_MODELS` variable (the same JSON)
 * replaces them, and `USD_INR_RATE` overrides the rate alone. Money is exact: decimal strings in, integer
 * ten-thousandths of a dollar and paise inside, JSON numbers with a fixed number of decimals out.
 *
 * @example
 * const catalog = parseModelCatalog(undefined, undefined); // the defaults
 * catalog.get("pro")?.pricing["4K"]; // { credits: 15, usd: "0.1500", inr: "13.28" }
 */
import { z } from "zod";
import defaults from "../../config/photo-models.json";

export const MODEL_SLUGS = ["pro", "standard", "flash"] as const;
export type ModelSlug = (typeof MODEL_SLUGS)[number];

export const RESOLUTIONS = ["1K", "2K", "4K"] as const;
export type Resolution = (typeof RESOLUTIONS)[number];

export const ASPECT_RATIOS = ["1:1", "4:3", "3:4", "16:9", "9:16", "4:5", "3:2", "2:3", "21:9"] as const;
export type AspectRatio = (typeof ASPECT_RATIOS)[number];

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

const Decimal = z.string().regex(/^\d{1,6}(\.\d{1,4})?$/, 'must be a decimal string with at most 4 decimals, e.g. "0.15"');
const ResolutionSchema = z.enum(RESOLUTIONS);

const ModelEntry = z
  .object({
    model: z.enum(MODEL_SLUGS),
    modelId: z.string().min(3).max(200),
    name: z.string().min(1).max(60),
    provider: z.string().min(1).max(60),
    description: z.string().max(300),
    badge: z.string().max(40),
    supportedResolutions: z.array(ResolutionSchema).min(1),
    maxBatchSize: z.number().int().min(1).max(10),
    pricing: z.partialRecord(ResolutionSchema, Decimal),
    providerResolution: z.partialRecord(ResolutionSchema, z.string()).optional(),
  })
  .strict()
  .refine((m) => m.supportedResolutions.every((r) => m.pricing[r] !== undefined), { message: "every supported resolution needs a price" });

const CatalogFile = z
  .object({
    usdToInr: Decimal,
    creditsPerUsd: z.number().int().min(1).max(100_000),
    models: z.array(ModelEntry).min(1),
  })
  .strict()
  .refine((c) => new Set(c.models.map((m) => m.model)).size === c.models.length, { message: "each model slug once" });

export type CatalogFile = z.infer<typeof CatalogFile>;

export interface ModelCatalog {
  models: ModelOption[];
  get(slug: ModelSlug): ModelOption | undefined;
}

/**
 * Parses the catalogue: `json` is PHOTO_MODELS (or undefined for the defaults), `usdToInr` USD_INR_RATE.
 * Throws an Error naming the problem; config.ts turns it into a ConfigError for the variable.
 */
export function parseModelCatalog(json: string | undefined, usdToInr: string | undefined): ModelCatalog {
  let raw: unknown = defaults;
  if (json !== undefined) {
    try {
      raw = JSON.parse(json);
    } catch {
      throw new Error("is not valid JSON");
    }
  }
  const parsed = CatalogFile.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`${issue.path.join(".") || "(root)"} ${issue.message}`);
  }
  const file = parsed.data;
  const rate = usdToInr ?? file.usdToInr;
  if (!Decimal.safeParse(rate).success) throw new Error(`USD_INR_RATE must be a decimal like "88.50", got "${rate}"`);
  const models = file.models.map((m): ModelOption => {
    const supported = RESOLUTIONS.filter((r) => m.supportedResolutions.includes(r));
    const pricing: Partial<Record<Resolution, Price>> = {};
    for (const r of supported) pricing[r] = price(m.pricing[r]!, rate, file.creditsPerUsd);
    return {
      model: m.model,
      modelId: m.modelId,
      name: m.name,
      provider: m.provider,
      description: m.description,
      badge: m.badge,
      supportedResolutions: supported,
      maxBatchSize: m.maxBatchSize,
      defaultResolution: supported[supported.length - 1]!,
      pricing,
      providerResolution: m.providerResolution,
    };
  });
  return { models, get: (slug) => models.find((m) => m.model === slug) };
}

/** Ten-thousandths of a unit, exactly, from a decimal string. */
function toE4(decimal: string): bigint {
  const [whole, frac = ""] = decimal.split(".");
  return BigInt(whole!) * 10_000n + BigInt(`${frac}0000`.slice(0, 4));
}

function formatFixed(value: bigint, scale: number): string {
  const unit = 10n ** BigInt(scale);
  const whole = value / unit;
  const frac = (value % unit).toString().padStart(scale, "0");
  return scale ? `${whole}.${frac}` : `${whole}`;
}

/**
 * One image's price: USD as given, INR = USD x rate rounded half up to the paisa, credits = USD x
 * creditsPerUsd rounded up (a credit is never worth less than what it buys).
 *
 * @example
 * price("0.15", "88.50", 100); // { credits: 15, usd: "0.1500", inr: "13.28" }
 */
export function price(usd: string, usdToInr: string, creditsPerUsd: number): Price {
  const usdE4 = toE4(usd);
  const paise = (usdE4 * toE4(usdToInr) + 500_000n) / 1_000_000n; // e4 * e4 = e8; paise are e2
  const credits = (usdE4 * BigInt(creditsPerUsd) + 9_999n) / 10_000n;
  return { credits: Number(credits), usd: formatFixed(usdE4, 4), inr: formatFixed(paise, 2) };
}

/** n images at one price, exactly. */
export function times(p: Price, n: number): Price {
  const usdE4 = toE4(p.usd) * BigInt(n);
  const paise = (toE4(p.inr) / 100n) * BigInt(n);
  return { credits: p.credits * n, usd: formatFixed(usdE4, 4), inr: formatFixed(paise, 2) };
}

/** The contract's view of a model: prices as JSON numbers (their decimal text is exact). */
export function modelView({ pricing, providerResolution: _providerResolution, ...m }: ModelOption) {
  const money = (p: Price) => ({ credits: p.credits, usd: Number(p.usd), inr: Number(p.inr) });
  const pricingPerResolution: Partial<Record<Resolution, ReturnType<typeof money>>> = {};
  for (const r of m.supportedResolutions) pricingPerResolution[r] = money(pricing[r]!);
  return {
    ...m,
    supportsVariableResolution: m.supportedResolutions.length > 1,
    supportsBatchGeneration: m.maxBatchSize > 1,
    estimatedCost: money(pricing[m.defaultResolution]!),
    pricingPerResolution,
  };
}
