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
import { decodeAtMost } from "./load";
import { resizePremultiplied } from "../../images";
import { styleFromReference } from "./reference";
import { cutOut } from "./segment";
import { drawProductShadow, drawPropShadow } from "./shadow";
import { sceneStyleFor } from "./styles";

export { cutOut, type CutOut } from "./segment";
export { sceneStyleFor, TEMPLATE_STYLES } from "./styles";
export { styleFromReference, dominantColours } from "./reference";
export { renderDemoProduct } from "./demo-product";
export { encodeScenePng } from "./png";
export type { SceneStyle } from "./style";

/** The largest product photo side worked on; bigger photos are shrunk first (memory on Workers). */
const MAX_WORK_SIDE = 2048;

/**
 * The embedded generator: decodes the product, cuts it out, composes it on the template's (or prompt's,
 * or reference's) backdrop, and returns exactly `request.width` x `request.height` opaque RGBA.
 *
 * @example
 * const scene = await LocalGenerator().generateScene({ ...request, templateId: "studio-plinth" });
 */
export function LocalGenerator(): ImageGenerator {
  return {
    name: "local",
    async generateScene(request: SceneRequest): Promise<RgbaImage> {
      request.signal?.throwIfAborted();
      const { width: W, height: H } = request;
      const limit = Math.min(MAX_WORK_SIDE, Math.ceil(Math.max(W, H) * 1.25));
      const photo = decodeAtMost(request.product.bytes, limit);
      let style = sceneStyleFor(request.templateId, request.prompt);
      if (request.reference) style = styleFromReference(decodeAtMost(request.reference.bytes, 256), style);
      request.signal?.throwIfAborted();
      return composeScene(cutOut(photo).image, style, W, H);
    },
  };
}

/**
 * Composes an already cut-out product (straight alpha) into the style's scene at W x H.
 *
 * @example
 * const scene = composeScene(cutOut(photo).image, sceneStyleFor("studio-glossy", ""), 1024, 1024);
 */
export function composeScene(cut: RgbaImage, style: ReturnType<typeof sceneStyleFor>, W: number, H: number): RgbaImage {
  const frame = layoutFor(style, cut.width, cut.height, W, H);
  const product = resizePremultiplied(cut, frame.pw, frame.ph);
  const canvas = renderBackdrop(style, frame);
  drawPropShadow(canvas, style, frame);
  drawProp(canvas, style, frame);
  drawProductShadow(canvas, product, style, frame);
  drawReflection(canvas, product, style, frame);
  drawProduct(canvas, product, style, frame);
  return canvas;
}
