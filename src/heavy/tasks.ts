/**
 * The CPU-heavy image work of every area, as plain functions from bytes (and numbers) to results, so it can
 * run wherever the runtime puts it: on Node in a pool of worker threads (functions/node/heavy-pool.ts), on
 * the Worker on the request's own thread. Inputs and outputs are structured-clonable (typed arrays, plain
 * objects); errors are ApiError or GenerationError, which the pool carries across threads by value.
 * It names every area's tasks, so it belongs to the app layer (with src/app.ts); the limiter and the port
 * (src/heavy/index.ts) sit below the areas and learn the tasks' types from it by declaration merging.
 *
 * @example
 * const text = await HEAVY_TASKS.qrDecode({ bytes }); // string or null
 */
import { normaliseToJpeg, resizeRgba, type DecodeLimits, type NormalisedJpeg, type RgbaImage } from "../images";
import { decode, decodeLuma, encodeJpeg, encodePng, readHeader } from "../images/codecs";
import { DEFAULT_DECODE_LIMITS } from "../images/limits";
import { normaliseHead, normaliseTail, type JpegPart } from "../images/normalise";
import type { PlanePipe } from "../images/plane-pipe";
import { uprightSize } from "../images/exif";
import { thumbnailSize } from "../images/geometry";
import { drawTexts, fitCover, logoDrawnSize, placeLogo, prepareLogo, type PreparedLogo, type TextLayout } from "../photo/compose";
import { encodeScenePng, LocalGenerator, renderDemoProduct } from "../photo/local";
import type { LogoPlacement, ModelOption, SceneRequest } from "../photo/types";
import { decodeQrImage, WORKING_SIDE } from "../qr/decode";
import { renderQr, type QrDesign, type RenderedQr } from "../qr/render";
import type { HeavyOutput, HeavyRunner } from "./index";

export interface PhotoFinish {
  /** The scene: made here by the local compositor, or already made (a provider's output). */
  scene: { local: Omit<SceneRequest, "signal"> } | { image: RgbaImage };
  width: number;
  height: number;
  logo?: { image: RgbaImage | PreparedLogo; placement: LogoPlacement; size: number };
  texts: { overlayText?: string; marketingText?: string };
  textLayout?: TextLayout;
  /** The deployment's decode limits for the local compositor's inputs (Services.imageLimits). */
  limits?: DecodeLimits;
}

export const HEAVY_TASKS = {
  /**
   * Reads a QR code: the image decoded no larger than the reader's working side needs (a JPEG at an N/8
   * scale, its luma alone where it has one; a PNG box-filtered while it streams), then the reader's passes;
   * only the pass for a small code in a big photo decodes it again, at twice that side. Null when nothing
   * reads.
   */
  async qrDecode(input: { bytes: Uint8Array; limits?: DecodeLimits }): Promise<string | null> {
    const near = (side: number) => decodeLuma(input.bytes, { near: side, limits: input.limits }) ?? decode(input.bytes, { near: side, limits: input.limits });
    const image = near(WORKING_SIDE);
    // Decoded at full size already (a photo under 8/7 of the working side): another decode gives nothing more.
    const stored = readHeader(input.bytes);
    const whole = Math.max(image.width, image.height) >= Math.max(stored.width, stored.height);
    const result = await decodeQrImage(image, whole ? {} : { sharper: () => near(WORKING_SIDE * 2) });
    return result?.text ?? null;
  },

  /**
   * Renders a QR code with a logo: the logo decoded and shrunk to no more than the code can show (so a
   * 20 MP logo costs one reduction instead of one per layout the renderer tries), then the scan-checked
   * render. Codes without a logo are cheap and render on the request thread.
   */
  async qrWithLogo(input: { payload: string; design: Omit<QrDesign, "logo">; logo: Uint8Array; limits?: DecodeLimits }): Promise<RenderedQr> {
    // The logo box is at most ratio x size; the scan check renders at up to ~1000 px.
    const needed = Math.ceil(input.design.logoSizeRatio * Math.max(input.design.size, 1024));
    return renderQr(input.payload, { ...input.design, logo: decode(input.logo, { atMost: needed, limits: input.limits }) });
  },

  /** A media upload made into the platforms' JPEG (upright, sRGB, within 1440 x 1800). */
  normaliseMedia(input: { bytes: Uint8Array; limits?: DecodeLimits }): Promise<NormalisedJpeg> {
    return normaliseToJpeg(input.bytes, input.limits);
  },

  /**
   * `normaliseMedia` split over two threads (src/images/plane-pipe.ts), run at the same time on the same
   * pipe: the head decodes, the tail resizes and encodes the rows decoded so far. The head answers null when
   * the tail has the JPEG; the tail answers null when the head kept the work; when the head took the last
   * rows to encode, each answers its part, which `joinSplit` joins.
   */
  normaliseMediaHead(input: { bytes: Uint8Array; limits?: DecodeLimits; pipe: PlanePipe }): Promise<NormalisedJpeg | JpegPart | null> {
    return normaliseHead(input.bytes, input.limits ?? DEFAULT_DECODE_LIMITS, input.pipe);
  },

  normaliseMediaTail(input: { pipe: PlanePipe }): Promise<NormalisedJpeg | JpegPart | null> {
    return normaliseTail(input.pipe);
  },

  /** A template's demo image: the demo product render in the template's scene, size x size, as a PNG. */
  async photoDemo(input: { templateId: string; prompt: string; model: ModelOption; size: number }): Promise<Uint8Array> {
    const product = renderDemoProduct(input.size);
    const scene = await LocalGenerator().generateScene({
      product: { bytes: encodePng(product), mimeType: "image/png", width: product.width, height: product.height, url: "" },
      prompt: input.prompt,
      templateId: input.templateId,
      model: input.model,
      resolution: "1K",
      aspectRatio: "1:1",
      width: input.size,
      height: input.size,
    });
    return encodeScenePng(scene);
  },

  /**
   * An area B logo, once per request: decoded as small as its format allows while still covering the size
   * it is drawn at on the request's scenes (`canvas`, `size`), then resized to exactly that size and
   * premultiplied, so each item draws it as it is.
   */
  async photoLogo(input: { bytes: Uint8Array; canvas: { width: number; height: number }; size: number; limits?: DecodeLimits }): Promise<PreparedLogo> {
    const drawn = logoDrawnSize(input.canvas, uprightSize(readHeader(input.bytes)), input.size);
    return prepareLogo(decode(input.bytes, { atLeast: Math.max(drawn.width, drawn.height), limits: input.limits }), input.canvas, input.size, true);
  },

  /**
   * One area B image: the scene (the local compositor's, or a provider's), fitted to the exact size, the
   * logo and texts drawn over it, as a PNG and a JPEG thumbnail.
   */
  async photoFinish(input: PhotoFinish): Promise<{ bytes: Uint8Array; thumbnail: Uint8Array }> {
    const scene = "local" in input.scene ? await LocalGenerator({ limits: input.limits }).generateScene(input.scene.local) : input.scene.image;
    const canvas = fitCover(scene, input.width, input.height);
    const logoBox = input.logo ? placeLogo(canvas, input.logo.image, input.logo.placement, input.logo.size) : undefined;
    await drawTexts(canvas, input.texts, logoBox, input.textLayout);
    const size = thumbnailSize(canvas.width, canvas.height);
    const thumb = resizeRgba(canvas, size.width, size.height);
    return { bytes: await encodeScenePng(canvas), thumbnail: encodeJpeg(thumb, 82, { alpha: "ignore" }) };
  },
};

type Registry = typeof HEAVY_TASKS;

declare module "./index" {
  /** The registry's tasks, by name (see HeavyTasks in src/heavy/index.ts). */
  interface HeavyTasks extends Registry {}
}

/** The runner that runs a task on the caller's own thread (the Worker; Node with HEAVY_THREADS=0). */
export const inlineRunner: HeavyRunner = (name, input) => (HEAVY_TASKS[name] as (i: typeof input) => Promise<HeavyOutput<typeof name>>)(input);
