/**
 * The local compositor, area B's embedded generator: no AI, a clean catalogue shot. The product photo is
 * cut out from its plain background (segment.ts), placed at a catalogue scale on a backdrop painted from
 * the template's style, the prompt's words or the reference image's palette (backdrop.ts, styles.ts,
 * reference.ts), with a soft contact shadow and, on glossy floors, a reflection (compose.ts).
 *
 * @example
 * const generator = LocalGenerator();
 * const scene = await generator.generateScene(request); // request.width x request.height, opaque RGBA
 */
import type { RgbaImage } from "../../images";
import type { ImageGenerator, SceneRequest } from "../types";
import { renderBackdrop } from "./backdrop";
import { drawProduct, drawReflection, layoutFor } from "./compose";
import { drawProp } from "./props";
import { decode, openPhoto, type PhotoSource } from "../../images/codecs";
import type { DecodeLimits } from "../../images/limits";
import { resizePremultiplied } from "../../images";
import { styleFromReference } from "./reference";
import { ANALYSIS_SIDE, planCutOut } from "./segment";
import { drawProductShadow, drawPropShadow } from "./shadow";
import type { SceneStyle } from "./style";
import { sceneStyleFor } from "./styles";

export { cutOut, type CutOut } from "./segment";
export { sceneStyleFor, TEMPLATE_STYLES } from "./styles";
export { styleFromReference, dominantColours } from "./reference";
export { renderDemoProduct } from "./demo-product";
export { encodeScenePng } from "./png";
export { openPhoto } from "../../images/codecs";
export type { SceneStyle } from "./style";

/** The largest product photo side worked on; bigger photos are shrunk first (memory on Workers). */
const MAX_WORK_SIDE = 2048;
/** How much larger than drawn the product is cut out, for the small copy's imprecision. */
const HEADROOM = 1.05;

/**
 * The embedded generator: decodes the product, cuts it out, composes it on the template's (or prompt's,
 * or reference's) backdrop, and returns exactly `request.width` x `request.height` opaque RGBA.
 *
 * @example
 * const scene = await LocalGenerator().generateScene({ ...request, templateId: "studio-plinth" });
 */
export function LocalGenerator(options: { limits?: DecodeLimits } = {}): ImageGenerator {
  return {
    name: "local",
    heavyWork: true,
    async generateScene(request: SceneRequest): Promise<RgbaImage> {
      request.signal?.throwIfAborted();
      const { width: W, height: H } = request;
      let style = sceneStyleFor(request.templateId, request.prompt);
      if (request.reference) style = styleFromReference(decode(request.reference.bytes, { atMost: 256, limits: options.limits }), style);
      const cut = cutOutAtDrawnSize(openPhoto(request.product.bytes, options.limits), style, W, H);
      request.signal?.throwIfAborted();
      return composeScene(cut, style, W, H, true);
    },
  };
}

/**
 * The product cut out from the photo decoded at about the size it will be drawn (HEADROOM above it), not
 * the size it was shot at. The background is found on a small copy (a JPEG decoded at N/8 scale, no resize),
 * which also tells the product's size in the scene; the outline is then decided again on a copy at the
 * smallest N/8 scale above the drawn size. A product takes about half of a scene's shorter side, so a
 * 1200 x 1500 photo for a 1536 px scene is usually finished at 5/8 scale. Should the cut-out come out
 * smaller than drawn after all, it is finished again at the largest size.
 *
 * @example
 * const cut = cutOutAtDrawnSize(openPhoto(jpeg), sceneStyleFor("studio-plinth", ""), 1536, 1536);
 */
export function cutOutAtDrawnSize(source: PhotoSource, style: SceneStyle, W: number, H: number): RgbaImage {
  const limit = Math.min(MAX_WORK_SIDE, Math.ceil(Math.max(W, H) * 1.25));
  const small = source.at(ANALYSIS_SIDE * 0.75, ANALYSIS_SIDE);
  const plan = planCutOut(small);
  const drawn = layoutFor(style, plan.box.width, plan.box.height, W, H);
  const scale = Math.max(drawn.pw / plan.box.width, drawn.ph / plan.box.height); // drawn pixels per small pixel
  const want = Math.max(small.width, small.height) * scale * HEADROOM;
  // Each copy is the source's to give (a photo decoded whole is kept, but only ever made opaque, every time).
  const cut = plan.finish(source.at(Math.min(want, limit), limit), true).image;
  if (want >= limit) return cut;
  const frame = layoutFor(style, cut.width, cut.height, W, H);
  return cut.width < frame.pw || cut.height < frame.ph ? plan.finish(source.at(limit, limit), true).image : cut;
}

/**
 * Composes an already cut-out product (straight alpha) into the style's scene at W x H. With `owned`, the
 * cut-out's pixels are the caller's to spend: premultiplied where they are, not in a copy.
 *
 * @example
 * const scene = composeScene(cutOut(photo).image, sceneStyleFor("studio-glossy", ""), 1024, 1024);
 */
export function composeScene(cut: RgbaImage, style: SceneStyle, W: number, H: number, owned = false): RgbaImage {
  const frame = layoutFor(style, cut.width, cut.height, W, H);
  const product = resizePremultiplied(cut, frame.pw, frame.ph, owned);
  const canvas = renderBackdrop(style, frame);
  drawPropShadow(canvas, style, frame);
  drawProp(canvas, style, frame);
  drawProductShadow(canvas, product, style, frame);
  drawReflection(canvas, product, style, frame);
  drawProduct(canvas, product, style, frame);
  return canvas;
}
