/**
 * What the local compositor draws behind a product: a small vocabulary of backdrop kinds, surfaces, props
 * and light effects, combined per template (styles.ts) or from the words of a free-text prompt.
 */
import type { Rgb } from "./raster";

/** How the wall meets the floor. */
export type BackdropKind =
  /** Seamless paper sweep: one gradient curving from wall into floor, no visible horizon. */
  | "sweep"
  /** A wall and a tabletop meeting at a soft horizon; the tabletop carries a material texture. */
  | "table"
  /** Dark room, one spotlight pool on the floor and a glow on the wall, vignette. */
  | "spot"
  /** Seen from above: the surface fills the frame (flat lay). */
  | "top";

/** The tabletop or floor material. */
export type Surface = "plain" | "marble" | "wood" | "linen" | "sand" | "snow" | "slate" | "stone" | "moss" | "tile" | "satin";

/** Something under or behind the product. */
export type Prop = "none" | "plinth" | "podium" | "circle";

/** Out-of-focus light in the background. */
export type Lights = "none" | "bokeh" | "fairy" | "hearts" | "confetti" | "droplets" | "petals" | "caustics" | "ridges" | "beams";

export interface SceneStyle {
  /** Seeds every procedural detail (the template id, or the prompt's words). */
  seed: string;
  backdrop: BackdropKind;
  /** Wall gradient, top to the horizon. */
  wall: [Rgb, Rgb];
  /** Floor, back (at the horizon) to front (bottom edge). */
  floor: [Rgb, Rgb];
  surface: Surface;
  /** Colour of the surface's pattern (veins, grain, weave). */
  pattern: Rgb;
  prop: Prop;
  propColour: Rgb;
  lights: Lights;
  /** Colours of bokeh, confetti, petals. */
  accents: Rgb[];
  /** Glossy floor: a faded mirror image of the product below it. */
  reflection: number;
  /** 0 none .. 1 strong darkening of the corners. */
  vignette: number;
  /** Key light side: -1 from the left, 1 from the right; shadows fall the other way. */
  lightFrom: number;
  /** Contact shadow strength 0..1. */
  shadow: number;
  /** Product's longest side as a fraction of the frame's shorter side. */
  productScale: number;
  /** Horizontal centre of the product, fraction of the width. */
  productX: number;
  /** Gap between product and floor, fraction of the shorter side (levitation). */
  lift: number;
  /** Two-tone backdrop: the second colour covers the right part of the wall. */
  split?: Rgb;
}

/** A neutral studio style, the base every template and prompt starts from. */
export function baseStyle(seed: string): SceneStyle {
  return {
    seed,
    backdrop: "sweep",
    wall: [
      [236, 236, 234],
      [214, 214, 212],
    ],
    floor: [
      [226, 226, 224],
      [244, 244, 242],
    ],
    surface: "plain",
    pattern: [180, 180, 180],
    prop: "none",
    propColour: [235, 232, 226],
    lights: "none",
    accents: [],
    reflection: 0,
    vignette: 0.15,
    lightFrom: -1,
    shadow: 0.55,
    productScale: 0.64,
    productX: 0.5,
    lift: 0,
  };
}

/** Where things are in the output frame (see layoutFor). */
export interface Frame {
  width: number;
  height: number;
  /** Shorter side. */
  s: number;
  /** Wall/floor line. */
  horizonY: number;
  /** Product centre x and base y. */
  cx: number;
  baseY: number;
  pw: number;
  ph: number;
}
