/**
 * The scene templates: 34 scenes in five families (the contract names studio setups, lifestyle scenes,
 * holiday themes and ecommerce backgrounds; outdoor scenes are a fifth). Each prompt describes the scene
 * only; at request time the service adds its own clause that keeps the product exactly as photographed.
 * The prompts stay on the server: the list endpoint shows id, title, category and a demo image.
 *
 * @example
 * const template = findTemplate("hol-diwali"); // { id, title, categoryId, prompt }
 */
import type { CategoryId, SceneTemplate } from "./types";

export const CATEGORY_TITLES: Record<CategoryId, string> = {
  studio: "Studio",
  lifestyle: "Lifestyle",
  outdoor: "Outdoor & Nature",
  holiday: "Holidays & Seasons",
  ecommerce: "E-commerce",
};

const t = (id: string, title: string, categoryId: CategoryId, prompt: string, textLayout?: SceneTemplate["textLayout"]): SceneTemplate => ({
  id,
  title,
  categoryId,
  prompt,
  ...(textLayout ? { textLayout } : {}),
});

export const TEMPLATES: readonly SceneTemplate[] = [
  t(
    "studio-white-sweep",
    "Seamless White Sweep",
    "studio",
    "Product centred on a seamless white paper sweep, large overhead softbox, faint contact shadow, crisp catalogue look.",
  ),
  t(
    "studio-grey-gradient",
    "Soft Grey Gradient",
    "studio",
    "Product on a matte surface in front of a smooth light-to-mid grey gradient, diffused key light from the left.",
  ),
  t(
    "studio-color-pop",
    "Bold Colour Backdrop",
    "studio",
    "Product against a saturated single-colour wall and matching floor, hard rim light, punchy editorial contrast.",
  ),
  t(
    "studio-plinth",
    "Minimal Plinth",
    "studio",
    "Product on a round plaster plinth, warm beige backdrop, soft window-style light casting a long gentle shadow.",
  ),
  t("studio-dark-spot", "Dark Spotlight", "studio", "Product on black slate lit by one narrow spotlight, deep falloff, a trace of haze for a premium mood."),
  t(
    "studio-glossy",
    "Glossy Reflection",
    "studio",
    "Product on a glossy acrylic sheet that mirrors its base, clean white-to-grey background, high-key lighting.",
  ),
  t(
    "studio-levitate",
    "Floating Product",
    "studio",
    "Product hovering just above a pastel surface with a soft diffuse shadow below, seamless pastel backdrop.",
  ),
  t(
    "life-kitchen",
    "Morning Kitchen Counter",
    "lifestyle",
    "Product on a pale marble counter, blurred coffee cup and herbs behind, early sunlight through a side window.",
  ),
  t(
    "life-spa",
    "Spa Bathroom Shelf",
    "lifestyle",
    "Product on a damp stone shelf beside folded towels and a eucalyptus sprig, light steam, calm neutral tones.",
  ),
  t("life-desk", "Modern Workspace", "lifestyle", "Product on an oak desk next to a closed laptop and notebook, softly blurred bookshelf, daylight."),
  t("life-living", "Cosy Living Room", "lifestyle", "Product on a low wooden coffee table, knitted throw and warm lamp glow out of focus behind."),
  t("life-cafe", "Café Table", "lifestyle", "Product on a small round café table with a latte cup, warm street-café bokeh in the background."),
  t("life-flatlay", "Linen Flat Lay", "lifestyle", "Top-down flat lay of the product on natural linen with a few complementary accessories, even soft light."),
  t("life-bedside", "Bedside Nightstand", "lifestyle", "Product on a nightstand beside a book and small plant, late-afternoon warm light over crisp bedding."),
  t("out-beach", "Sunlit Sand", "outdoor", "Product resting on rippled sand at the waterline, shallow turquoise water, sparkling midday highlights."),
  t("out-moss", "Forest Moss", "outdoor", "Product on a mossy rock in a shaded forest, dappled light through leaves, fresh green palette."),
  t("out-splash", "Water Splash", "outdoor", "Product framed by a dynamic clear water splash with frozen droplets against a cool blue backdrop."),
  t("out-pebbles", "River Pebbles", "outdoor", "Product on smooth grey river stones glazed with a thin film of water, soft overcast light."),
  t("out-flowers", "Flower Bed", "outdoor", "Product nestled among fresh seasonal blooms, shallow depth of field, soft pastel garden light."),
  t("out-alpine", "Alpine Ledge", "outdoor", "Product on a granite ledge with hazy mountain peaks far behind, golden-hour side light."),
  t(
    "hol-christmas",
    "Christmas Hearth",
    "holiday",
    "Product beside a decorated fir branch, red and gold ornaments, warm fairy-light bokeh and fireplace glow.",
  ),
  t("hol-diwali", "Diwali Diyas", "holiday", "Product on a brass platter ringed by lit clay diyas, marigold petals and rangoli colours, warm festive glow."),
  t("hol-valentine", "Valentine Blush", "holiday", "Product on blush satin scattered with rose petals, soft heart-shaped bokeh, gentle pink light."),
  t("hol-halloween", "Halloween Night", "holiday", "Product on a weathered table with carved pumpkins and candlelight, orange and purple dusk tones."),
  t("hol-eid", "Eid Lantern Evening", "holiday", "Product on a patterned tray with brass lanterns and dates, deep teal night sky with a crescent-moon glow."),
  t("hol-lunar", "Lunar New Year", "holiday", "Product among red envelopes, paper lanterns and mandarins, rich red and gold palette."),
  t("hol-summer", "Poolside Summer", "holiday", "Product on the tiled edge of a pool with sparkling water caustics and a striped towel, bright summer sun."),
  t("hol-autumn", "Autumn Leaves", "holiday", "Product on rustic wood scattered with amber maple leaves, low warm autumn sun."),
  t("hol-snow", "Fresh Snow", "holiday", "Product standing in fresh powder snow with frost sparkle, cool blue-white morning light."),
  t(
    "ecom-pure-white",
    "Marketplace Pure White",
    "ecommerce",
    "Product isolated on a pure white background filling most of the frame, no props, only a faint natural shadow.",
  ),
  t(
    "ecom-light-grey",
    "Neutral Catalogue Grey",
    "ecommerce",
    "Product on a uniform very light grey background, even shadow-free lighting, consistent straight-on framing.",
  ),
  t(
    "ecom-copy-space",
    "Banner With Copy Space",
    "ecommerce",
    "Product on the right third of a soft gradient backdrop, leaving clean open space on the left for headline text.",
    "copy-left",
  ),
  t(
    "ecom-social-pastel",
    "Social Pastel Duo-tone",
    "ecommerce",
    "Product centred on a two-tone pastel backdrop with one simple geometric prop, bright even light for social feeds.",
  ),
  t(
    "ecom-promo-podium",
    "Promo Podium",
    "ecommerce",
    "Product on a glossy round podium under crossing spotlight beams with subtle confetti, energetic sale look.",
  ),
];

const BY_ID = new Map(TEMPLATES.map((template) => [template.id, template]));

/** The template with this id, or undefined. */
export function findTemplate(id: string): SceneTemplate | undefined {
  return BY_ID.get(id);
}

/** One element of `GET /product-photography-prompts`: everything but the prompt. */
export interface TemplateView {
  id: string;
  title: string;
  categoryId: CategoryId;
  categoryTitle: string;
  demoImageUrl: string;
}

/**
 * The public list, with each template's demo image served by this service.
 *
 * @example
 * listTemplates("https://api.example.com")[0].demoImageUrl; // https://api.example.com/api/image/demo/studio-white-sweep.png
 */
export function listTemplates(baseUrl: string): TemplateView[] {
  return TEMPLATES.map(({ id, title, categoryId }) => ({
    id,
    title,
    categoryId,
    categoryTitle: CATEGORY_TITLES[categoryId],
    demoImageUrl: `${baseUrl}${DEMO_PATH}/${id}.png`,
  }));
}

export const DEMO_PATH = "/api/image/demo";

/**
 * The prompt sent to a model: what to keep, the scene, and the per-product note. Logos and texts are never
 * asked of the model (the service draws them), so the prompt forbids them.
 */
export function scenePromptFor(parts: { template?: SceneTemplate; scenePrompt?: string; productPrompt?: string; hasReference: boolean }): string {
  const lines = ["Image 1 is the product. Keep its shape, proportions, colours, label text and logo exactly as photographed; do not redraw or restyle it."];
  if (parts.hasReference) lines.push("Image 2 is a style reference: take its lighting, palette and composition only, not its objects.");
  if (parts.template) lines.push(`Scene: ${parts.template.prompt}`);
  if (parts.scenePrompt) lines.push(parts.template ? `Adjust the scene: ${parts.scenePrompt}` : `Scene: ${parts.scenePrompt}`);
  if (parts.productPrompt) lines.push(`For this product: ${parts.productPrompt}`);
  lines.push("Photorealistic commercial product photograph. Add no text, no lettering, no watermark and no extra logos.");
  return lines.join("\n");
}
