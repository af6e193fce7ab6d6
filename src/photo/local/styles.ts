/**
 * One backdrop style per scene template of the catalogue, and styles picked from the words of a free-text
 * prompt. Deterministic: the same template id or prompt always draws the same scene.
 *
 * @example
 * sceneStyleFor("studio-dark-spot", "").backdrop; // "spot"
 * sceneStyleFor(undefined, "pink marble bathroom").surface; // "marble"
 */
import { hex, mix, type Rgb } from "./raster";
import { baseStyle, type SceneStyle } from "./style";

/** What a template or a prompt word changes in the base style. */
type StyleChange = Partial<Omit<SceneStyle, "seed">>;
const c = hex;
const WARM_LIGHTS: Rgb[] = [c("#ffd27a"), c("#ffb347"), c("#fff1c1"), c("#ffcf6e")];

export const TEMPLATE_STYLES: Record<string, StyleChange> = {
  "studio-white-sweep": { wall: [c("#f4f4f3"), c("#ebebea")], floor: [c("#eeeeed"), c("#fbfbfa")], vignette: 0.08, shadow: 0.5 },
  "studio-grey-gradient": { wall: [c("#c9cacc"), c("#9fa1a5")], floor: [c("#a9abae"), c("#c4c5c8")], vignette: 0.25, lightFrom: -1 },
  "studio-color-pop": { wall: [c("#f2a93b"), c("#e8912a")], floor: [c("#ea9832"), c("#f5b04a")], vignette: 0.2, shadow: 0.6 },
  "studio-plinth": {
    wall: [c("#eadfcf"), c("#dccdb7")],
    floor: [c("#d9c9b2"), c("#e9dcc9")],
    prop: "plinth",
    propColour: c("#efe8dd"),
    lightFrom: -1,
    shadow: 0.5,
    productScale: 0.5,
  },
  "studio-dark-spot": {
    backdrop: "spot",
    wall: [c("#16171a"), c("#0c0d0f")],
    floor: [c("#1d1e21"), c("#0b0b0d")],
    surface: "slate",
    pattern: c("#2a2c30"),
    vignette: 0.7,
    shadow: 0.75,
  },
  "studio-glossy": { wall: [c("#ffffff"), c("#dcdde0")], floor: [c("#e4e5e8"), c("#f6f6f8")], reflection: 0.32, vignette: 0.12, shadow: 0.45 },
  "studio-levitate": { wall: [c("#dcd3f0"), c("#cfc4ea")], floor: [c("#d3c9ec"), c("#e5dff5")], lift: 0.07, shadow: 0.75, vignette: 0.1 },
  "life-kitchen": {
    backdrop: "table",
    wall: [c("#efe9df"), c("#ddd3c4")],
    floor: [c("#e9e7e4"), c("#f7f6f4")],
    surface: "marble",
    pattern: c("#9b9a9a"),
    lights: "bokeh",
    accents: [c("#fff6dc"), c("#e9f0d8"), c("#f5e2c4")],
    lightFrom: 1,
  },
  "life-spa": {
    backdrop: "table",
    wall: [c("#e3e6e1"), c("#cdd3cc")],
    floor: [c("#b9bbb6"), c("#d4d5d0")],
    surface: "stone",
    pattern: c("#8f928c"),
    lights: "bokeh",
    accents: [c("#f4f6ef"), c("#dfe8dc")],
    vignette: 0.2,
  },
  "life-desk": {
    backdrop: "table",
    wall: [c("#e8e6e1"), c("#cfcac1")],
    floor: [c("#c9a77c"), c("#ddbd92")],
    surface: "wood",
    pattern: c("#9c7447"),
    lights: "bokeh",
    accents: [c("#f1ece2"), c("#cdd7de"), c("#e6d7bf")],
  },
  "life-living": {
    backdrop: "table",
    wall: [c("#8c6e57"), c("#5d4737")],
    floor: [c("#9a6b45"), c("#b58357")],
    surface: "wood",
    pattern: c("#5e3b20"),
    lights: "bokeh",
    accents: WARM_LIGHTS,
    vignette: 0.35,
  },
  "life-cafe": {
    backdrop: "table",
    wall: [c("#5a4032"), c("#3b2a22")],
    floor: [c("#f0ede8"), c("#faf8f5")],
    surface: "marble",
    pattern: c("#a9a29b"),
    lights: "bokeh",
    accents: WARM_LIGHTS,
    vignette: 0.35,
  },
  "life-flatlay": { backdrop: "top", floor: [c("#e7e0d3"), c("#ede7dc")], surface: "linen", pattern: c("#c9bfad"), shadow: 0.45, productScale: 0.6 },
  "life-bedside": {
    backdrop: "table",
    wall: [c("#e9dccb"), c("#c9b49a")],
    floor: [c("#a87b55"), c("#c0916a")],
    surface: "wood",
    pattern: c("#6e4a2c"),
    lights: "bokeh",
    accents: [c("#ffe2b0"), c("#fff3dc")],
    lightFrom: 1,
    vignette: 0.3,
  },
  "out-beach": {
    backdrop: "table",
    wall: [c("#9fd9e8"), c("#4fb9c9")],
    floor: [c("#e9d6b0"), c("#f3e4c6")],
    surface: "sand",
    pattern: c("#cdb68a"),
    lights: "bokeh",
    accents: [c("#ffffff"), c("#e6fbff")],
    vignette: 0.1,
  },
  "out-moss": {
    backdrop: "table",
    wall: [c("#3e5a34"), c("#22361f")],
    floor: [c("#4f7a33"), c("#6a9440")],
    surface: "moss",
    pattern: c("#2f4d20"),
    lights: "bokeh",
    accents: [c("#dff2b4"), c("#b6d98a"), c("#fff4c8")],
    vignette: 0.45,
  },
  "out-splash": {
    wall: [c("#bfe6f7"), c("#5fb3e0")],
    floor: [c("#7cc3e8"), c("#b7e1f5")],
    lights: "droplets",
    accents: [c("#ffffff"), c("#dff4ff")],
    reflection: 0.2,
    vignette: 0.2,
  },
  "out-pebbles": {
    backdrop: "table",
    wall: [c("#cfd3d4"), c("#a9aeb0")],
    floor: [c("#8e9294"), c("#a7abad")],
    surface: "stone",
    pattern: c("#5f6466"),
    vignette: 0.3,
  },
  "out-flowers": {
    backdrop: "table",
    wall: [c("#f3e3ea"), c("#dcecd6")],
    floor: [c("#d9e7cf"), c("#e7f0df")],
    surface: "plain",
    lights: "petals",
    accents: [c("#f7a8c4"), c("#ffd3e0"), c("#ffe79a"), c("#c9b2f0"), c("#ffffff")],
    vignette: 0.15,
  },
  "out-alpine": {
    backdrop: "table",
    wall: [c("#f6c98c"), c("#c9d3df")],
    floor: [c("#8a8680"), c("#a7a29a")],
    surface: "stone",
    pattern: c("#57524c"),
    lights: "ridges",
    accents: [c("#9aa7b8"), c("#7c889b")],
    lightFrom: -1,
    vignette: 0.2,
  },
  "hol-christmas": {
    backdrop: "table",
    wall: [c("#3a1f1a"), c("#1d1210")],
    floor: [c("#7b4a2c"), c("#94603b")],
    surface: "wood",
    pattern: c("#4b2a16"),
    lights: "fairy",
    accents: [c("#ffd27a"), c("#ff9f45"), c("#ffe9b5"), c("#e8483c")],
    vignette: 0.45,
    shadow: 0.7,
  },
  "hol-diwali": {
    backdrop: "table",
    wall: [c("#4a1530"), c("#26091a")],
    floor: [c("#b07a2a"), c("#d09a3e")],
    surface: "satin",
    pattern: c("#7a4c12"),
    lights: "fairy",
    accents: [c("#ffc24a"), c("#ff8c2a"), c("#ffe08a"), c("#ff5e7a")],
    vignette: 0.45,
    shadow: 0.65,
  },
  "hol-valentine": {
    backdrop: "table",
    wall: [c("#f7c9d4"), c("#eaa5b8")],
    floor: [c("#f3c2cf"), c("#fbdbe3")],
    surface: "satin",
    pattern: c("#d98ea3"),
    lights: "hearts",
    accents: [c("#ffffff"), c("#ffd9e4"), c("#ff9fb8")],
    vignette: 0.15,
  },
  "hol-halloween": {
    backdrop: "table",
    wall: [c("#3b2147"), c("#1a0f22")],
    floor: [c("#5a4030"), c("#6e4f3a")],
    surface: "wood",
    pattern: c("#2e1f15"),
    lights: "bokeh",
    accents: [c("#ff8a1f"), c("#ffb347"), c("#9b59d0")],
    vignette: 0.55,
    shadow: 0.7,
  },
  "hol-eid": {
    backdrop: "table",
    wall: [c("#0f3b44"), c("#082128")],
    floor: [c("#a9853f"), c("#c9a35a")],
    surface: "satin",
    pattern: c("#6e5424"),
    lights: "fairy",
    accents: [c("#ffd98a"), c("#ffe9b8"), c("#9fe0e0")],
    vignette: 0.45,
  },
  "hol-lunar": {
    backdrop: "table",
    wall: [c("#a3141c"), c("#6e0b12")],
    floor: [c("#8e1a1a"), c("#b02525")],
    surface: "satin",
    pattern: c("#5c0c0c"),
    lights: "bokeh",
    accents: [c("#ffd24a"), c("#ffb03a"), c("#ff6a3a")],
    vignette: 0.4,
  },
  "hol-summer": {
    backdrop: "table",
    wall: [c("#5ed0e6"), c("#1aa3c8")],
    floor: [c("#f4f1ea"), c("#ffffff")],
    surface: "tile",
    pattern: c("#bfd9df"),
    lights: "caustics",
    accents: [c("#ffffff")],
    vignette: 0.1,
  },
  "hol-autumn": {
    backdrop: "table",
    wall: [c("#c98a4b"), c("#8a4f25")],
    floor: [c("#8b5a36"), c("#a56f45")],
    surface: "wood",
    pattern: c("#553219"),
    lights: "petals",
    accents: [c("#e0701f"), c("#c2451b"), c("#f2a33a"), c("#9b3a12")],
    vignette: 0.35,
  },
  "hol-snow": {
    backdrop: "table",
    wall: [c("#d6e4f2"), c("#aac3de")],
    floor: [c("#eef3f8"), c("#ffffff")],
    surface: "snow",
    pattern: c("#c5d3e3"),
    lights: "bokeh",
    accents: [c("#ffffff"), c("#eaf4ff")],
    vignette: 0.15,
  },
  "ecom-pure-white": { wall: [c("#ffffff"), c("#ffffff")], floor: [c("#ffffff"), c("#ffffff")], vignette: 0, shadow: 0.35, productScale: 0.74 },
  "ecom-light-grey": { wall: [c("#efefef"), c("#ebebeb")], floor: [c("#ebebeb"), c("#efefef")], vignette: 0, shadow: 0.2, productScale: 0.7 },
  "ecom-copy-space": { wall: [c("#eef1f5"), c("#dfe5ec")], floor: [c("#e3e8ee"), c("#f1f4f7")], productX: 0.72, productScale: 0.56, vignette: 0.08 },
  "ecom-social-pastel": {
    wall: [c("#ffd9cc"), c("#ffd0c0")],
    split: c("#cfe8e0"),
    floor: [c("#f7c8b8"), c("#ffdcd0")],
    prop: "circle",
    propColour: c("#fff2c7"),
    vignette: 0,
  },
  "ecom-promo-podium": {
    backdrop: "spot",
    wall: [c("#3b1a6e"), c("#1c0c3a")],
    floor: [c("#2a1452"), c("#160a2e")],
    prop: "podium",
    propColour: c("#f3c84b"),
    lights: "confetti",
    accents: [c("#ffd23f"), c("#ff4f8b"), c("#3ec6ff"), c("#ffffff"), c("#7cff8a")],
    vignette: 0.4,
    productScale: 0.5,
  },
};

/** Words of a free-text prompt and what they change; later words win over earlier ones. */
const WORDS: Array<[RegExp, StyleChange]> = [
  [/\b(white|clean|minimal|marketplace)\b/, TEMPLATE_STYLES["studio-white-sweep"]!],
  [/\b(grey|gray|neutral)\b/, TEMPLATE_STYLES["studio-grey-gradient"]!],
  [/\b(kitchen|counter)\b/, TEMPLATE_STYLES["life-kitchen"]!],
  [/\b(spa|bath|bathroom|towel)\b/, TEMPLATE_STYLES["life-spa"]!],
  [/\b(desk|office|workspace|laptop)\b/, TEMPLATE_STYLES["life-desk"]!],
  [/\b(living|sofa|cosy|cozy|lamp)\b/, TEMPLATE_STYLES["life-living"]!],
  [/\b(cafe|café|coffee|latte)\b/, TEMPLATE_STYLES["life-cafe"]!],
  [/\b(flat ?lay|top-down|overhead view)\b/, TEMPLATE_STYLES["life-flatlay"]!],
  [/\b(bedroom|bedside|nightstand)\b/, TEMPLATE_STYLES["life-bedside"]!],
  [/\b(beach|sand|sea|ocean)\b/, TEMPLATE_STYLES["out-beach"]!],
  [/\b(forest|moss|woods|jungle)\b/, TEMPLATE_STYLES["out-moss"]!],
  [/\b(water|splash|aqua)\b/, TEMPLATE_STYLES["out-splash"]!],
  [/\b(pebbles?|stones?|rock|river)\b/, TEMPLATE_STYLES["out-pebbles"]!],
  [/\b(flowers?|garden|floral|blooms?|spring)\b/, TEMPLATE_STYLES["out-flowers"]!],
  [/\b(mountains?|alpine|hiking)\b/, TEMPLATE_STYLES["out-alpine"]!],
  [/\b(christmas|xmas|festive)\b/, TEMPLATE_STYLES["hol-christmas"]!],
  [/\b(diwali|diyas?|deepavali)\b/, TEMPLATE_STYLES["hol-diwali"]!],
  [/\b(valentine'?s?|romantic|love)\b/, TEMPLATE_STYLES["hol-valentine"]!],
  [/\b(halloween|spooky|pumpkins?)\b/, TEMPLATE_STYLES["hol-halloween"]!],
  [/\b(eid|ramadan|lanterns?)\b/, TEMPLATE_STYLES["hol-eid"]!],
  [/\b(lunar|chinese new year)\b/, TEMPLATE_STYLES["hol-lunar"]!],
  [/\b(summer|pool|poolside|tropical)\b/, TEMPLATE_STYLES["hol-summer"]!],
  [/\b(autumn|fall|leaves)\b/, TEMPLATE_STYLES["hol-autumn"]!],
  [/\b(snow|winter|frost|icy)\b/, TEMPLATE_STYLES["hol-snow"]!],
  [/\b(sale|promo|podium|discount)\b/, TEMPLATE_STYLES["ecom-promo-podium"]!],
  [/\b(pastel|social)\b/, TEMPLATE_STYLES["ecom-social-pastel"]!],
  [/\b(dark|black|night|moody|noir|luxury)\b/, TEMPLATE_STYLES["studio-dark-spot"]!],
  [/\b(glossy|reflection|mirror|acrylic)\b/, { reflection: 0.3 }],
  [/\b(plinth|pedestal)\b/, { prop: "plinth", productScale: 0.5 }],
  [/\b(floating|levitat\w*|hovering)\b/, { lift: 0.07 }],
  [/\b(marble)\b/, { surface: "marble", pattern: c("#9b9a9a"), backdrop: "table" }],
  [/\b(wood|wooden|oak|rustic)\b/, { surface: "wood", pattern: c("#8a5a30"), backdrop: "table" }],
  [/\b(linen|fabric)\b/, { surface: "linen", pattern: c("#c9bfad") }],
  [/\b(slate)\b/, { surface: "slate", pattern: c("#2a2c30") }],
  [/\b(bokeh|fairy lights?|sparkl\w*)\b/, { lights: "fairy", accents: WARM_LIGHTS }],
  [/\b(confetti|party|celebration)\b/, { lights: "confetti", accents: [c("#ffd23f"), c("#ff4f8b"), c("#3ec6ff"), c("#ffffff")] }],
];

/** Colour words: they tint the wall and floor while keeping the chosen scene's light and texture. */
const COLOURS: Array<[RegExp, Rgb]> = [
  [/\b(pink|blush|rose)\b/, c("#f4b6c8")],
  [/\bred\b/, c("#c8262e")],
  [/\b(orange|amber)\b/, c("#f29a3c")],
  [/\b(yellow|gold|golden)\b/, c("#f3cf5a")],
  [/\b(green|sage|mint)\b/, c("#a9cfa4")],
  [/\b(teal|turquoise)\b/, c("#3fb3b0")],
  [/\bblue\b/, c("#7fb2e5")],
  [/\bnavy\b/, c("#1f2e55")],
  [/\b(purple|violet|lavender|lilac)\b/, c("#bca4e3")],
  [/\b(beige|cream|sand|nude)\b/, c("#e9dcc6")],
  [/\b(brown|chocolate)\b/, c("#7a5038")],
];

/**
 * The backdrop style for a template id, else for the words of a free-text prompt (scene kinds such as
 * "kitchen" or "beach", materials such as "marble", moods such as "dark", colours such as "pink").
 * A template's style is used as designed: its own prompt (part of `prompt`) names colours that the
 * style already shows, so reading them again would only repaint it.
 *
 * @example
 * sceneStyleFor("ecom-copy-space", "").productX; // 0.72
 * sceneStyleFor(undefined, "christmas dinner table").lights; // "fairy"
 */
export function sceneStyleFor(templateId: string | undefined, prompt: string): SceneStyle {
  const template = templateId ? TEMPLATE_STYLES[templateId] : undefined;
  if (template) {
    return { ...baseStyle(templateId!), ...template };
  }
  const text = prompt.toLowerCase();
  let style: SceneStyle = baseStyle(`prompt:${text.trim().replace(/\s+/g, " ")}`);
  for (const [pattern, change] of WORDS) if (pattern.test(text)) style = { ...style, ...change };
  const colour = lastColour(text);
  if (colour) style = tinted(style, colour);
  return style;
}

/** The colour word that appears last in the text (the most specific one, as people write). */
function lastColour(text: string): Rgb | undefined {
  let best: Rgb | undefined;
  let at = -1;
  for (const [pattern, colour] of COLOURS) {
    const m = pattern.exec(text);
    if (m && m.index > at) {
      at = m.index;
      best = colour;
    }
  }
  return best;
}

/** Moves the wall and floor toward `colour`, keeping their light (top-to-bottom shading). */
export function tinted(style: SceneStyle, colour: Rgb, amount = 0.8): SceneStyle {
  const shift = (x: Rgb, k: number): Rgb => mix(x, [colour[0] * k, colour[1] * k, colour[2] * k], amount);
  const rel = (x: Rgb) => Math.min(1.15, Math.max(0.7, (x[0] + x[1] + x[2]) / 3 / 230));
  return {
    ...style,
    wall: [shift(style.wall[0], rel(style.wall[0])), shift(style.wall[1], rel(style.wall[1]))],
    floor: [shift(style.floor[0], rel(style.floor[0])), shift(style.floor[1], rel(style.floor[1]))],
  };
}
