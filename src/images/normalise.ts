/**
 * Social normalisation (the contract's image rules): upright, at most 1440 x 1800, at least 320 wide,
 * JPEG under 8 MB.
 */
import { ApiError } from "../lib/errors";
import { decodeWhole, flattenAlpha } from "./codec";
import { applyOrientation, swapsAxes } from "./exif";
import { decodeJpegPlanes, decodeSplitTail } from "./jpeg-decode";
import { decodeStoredAtLeast } from "./scaled";
import { DEFAULT_DECODE_LIMITS, type DecodeLimits } from "./limits";
import { encodeJpegBaseline, encodeJpegPlanes, encodeJpegRowsFrom } from "./jpeg-encode";
import { PipeAbandoned, PipeHead, PipeTail, type PlanePipe } from "./plane-pipe";
import { orientPlane, resizePlane, type Plane, type YCbCrImage } from "./planes";
import { resizeRgba, StreamedResample } from "./resize";
import { checkComplete } from "./integrity";
import { readImageHeader, type ImageHeader } from "./sniff";
import type { RgbaImage } from "./types";

export const SOCIAL_IMAGE = { maxWidth: 1440, maxHeight: 1800, minWidth: 320, maxBytes: 8 * 1024 * 1024 } as const;

const QUALITIES = [85, 75, 65, 50, 35];

export interface NormalisedJpeg {
  bytes: Uint8Array;
  width: number;
  height: number;
  mimeType: "image/jpeg";
}

/**
 * One of the two parts of a JPEG encoded by both threads of a split normalisation (plane-pipe.ts): the
 * tail's `first` MCU rows, up to `row`, and the head's `rest` from `row` on, to be joined by `joinSplit`.
 */
export interface JpegPart {
  part: "first" | "rest";
  bytes: Uint8Array;
  row: number;
  width: number;
  height: number;
}

export const isJpegPart = (value: NormalisedJpeg | JpegPart | null): value is JpegPart => !!value && "part" in value;

/**
 * The JPEG of a split normalisation from the tail's and the head's answers; null when they do not make one
 * (a part missing or not meeting the other, or the joined file over 8 MB, for which one thread lowers the
 * quality): the job then runs again on one thread.
 */
export function joinSplit(tail: NormalisedJpeg | JpegPart | null, head: NormalisedJpeg | JpegPart | null): NormalisedJpeg | null {
  if (!isJpegPart(tail)) return tail;
  if (!isJpegPart(head) || tail.part !== "first" || head.part !== "rest" || tail.row !== head.row) return null;
  if (tail.width !== head.width || tail.height !== head.height) return null;
  if (tail.bytes.length + head.bytes.length >= SOCIAL_IMAGE.maxBytes) return null;
  const bytes = new Uint8Array(tail.bytes.length + head.bytes.length);
  bytes.set(tail.bytes);
  bytes.set(head.bytes, tail.bytes.length);
  return { bytes, width: tail.width, height: tail.height, mimeType: "image/jpeg" };
}

/**
 * The output size for an upright `width` x `height` image: scaled down to fit 1440 x 1800 keeping the aspect
 * ratio, then widths below 320 enlarged to 320. Throws INVALID_IMAGE when that enlargement passes 1800 high.
 *
 * @example
 * planSocialSize(4000, 3000); // { width: 1440, height: 1080 }
 * planSocialSize(200, 300);   // { width: 320, height: 480 }
 */
export function planSocialSize(width: number, height: number): { width: number; height: number } {
  const { maxWidth, maxHeight, minWidth } = SOCIAL_IMAGE;
  const scale = Math.min(1, maxWidth / width, maxHeight / height);
  const w = Math.max(1, Math.round(width * scale));
  const h = Math.max(1, Math.round(height * scale));
  if (w >= minWidth) return { width: w, height: h };
  const enlarged = Math.round((height * minWidth) / width);
  if (enlarged > maxHeight) {
    throw new ApiError(
      "INVALID_IMAGE",
      `The image is too narrow: at ${width}x${height}, enlarging it to the minimum width of ${minWidth} pixels would make it ${enlarged} pixels high, over the ${maxHeight}-pixel limit. Use an image at most 5.6 times as high as it is wide.`,
    );
  }
  return { width: minWidth, height: enlarged };
}

/**
 * Decodes, applies EXIF orientation, resizes per `planSocialSize`, flattens transparency onto white and
 * encodes a JPEG under 8 MB (lowering quality until it fits). Throws INVALID_IMAGE / PAYLOAD_TOO_LARGE for
 * bad input, never a 500.
 *
 * @example
 * const { bytes, width, height } = await normaliseToJpeg(upload); // width <= 1440, height <= 1800
 */
export async function normaliseToJpeg(bytes: Uint8Array, limits: DecodeLimits = DEFAULT_DECODE_LIMITS): Promise<NormalisedJpeg> {
  // Without a pipe the answer is always the whole JPEG.
  return normalise(bytes, limits) as NormalisedJpeg;
}

/**
 * The head of normalisation split over two threads (plane-pipe.ts): `normaliseToJpeg`, except that a
 * baseline YCbCr JPEG whose planes the tail can stream is only decoded here, into memory the tail reads as
 * the rows arrive; then the tail's `normaliseTail` has the JPEG, and the head's answer is null, or, when it
 * took the last of the output rows the tail had not begun, its `rest` of the JPEG. Anything else (and
 * a JPEG found corrupt or unsupported part way) is done here as `normaliseToJpeg` does it, the tail told
 * to stop.
 */
export async function normaliseHead(bytes: Uint8Array, limits: DecodeLimits, pipe: PlanePipe): Promise<NormalisedJpeg | JpegPart | null> {
  const shared = isShared(bytes) ? bytes : undefined;
  const head = new PipeHead(pipe, shared);
  try {
    // The upload comes in shared memory (so that a failed tail can leave the job to one thread), and V8
    // reads shared memory on slower paths (the decoder's search for 0xFF bytes among them), so a private
    // copy costs the decode less than reading the shared bytes would.
    return normalise(shared ? shared.slice() : bytes, limits, head);
  } finally {
    head.close();
  }
}

const isShared = (bytes: Uint8Array) => typeof SharedArrayBuffer !== "undefined" && bytes.buffer instanceof SharedArrayBuffer;

function normalise(bytes: Uint8Array, limits: DecodeLimits, head?: PipeHead): NormalisedJpeg | JpegPart | null {
  const header = readImageHeader(bytes);
  checkComplete(bytes, header);
  const swap = swapsAxes(header.orientation);
  const target = swap ? planSocialSize(header.height, header.width) : planSocialSize(header.width, header.height);
  // Resize before rotating: rotating the small image is far cheaper than rotating the original.
  const storedW = swap ? target.height : target.width;
  const storedH = swap ? target.width : target.height;
  const planar = header.format === "jpeg" ? planesAtLeast(bytes, storedW, storedH, header.orientation, head) : null;
  if (planar instanceof HandedOver) return head && header.orientation <= 1 ? encodeRest(head, planar.planes, storedW, storedH) : null;
  if (planar && planar !== CORRUPT) return encodeUnder8MB((quality) => encodeJpegPlanes(planar, quality), planar.width, planar.height);
  head?.close(); // a decode that streamed and then failed: the tail stops before the fallback's long work
  const decoded = planar === CORRUPT ? decodeWhole(bytes, header, limits) : decodeAtLeast(bytes, header, storedW, storedH, limits);
  // Flatten before resizing so transparent pixels' hidden colour cannot bleed into the edges.
  const opaque = header.format === "jpeg" ? decoded : flattenAlpha(decoded);
  const upright = applyOrientation(resizeRgba(opaque, storedW, storedH), header.orientation);
  // Flattened above, so the encoder's ignoring of alpha is safe; 4:2:0 in JS beats photon's 4:4:4 encode.
  return encodeUnder8MB((quality) => encodeJpegBaseline(upright, quality), upright.width, upright.height);
}

/**
 * The tail of normalisation split over two threads: waits for the head to read the frame, then resizes
 * each plane's rows as they are decoded (StreamedResample: the same result as `resizePlane`) and encodes
 * each MCU row once its rows are there, or, for an image to be rotated, encodes after the last. Null when
 * the head kept the work, gave up part way or went quiet for `timeoutMs`.
 */
export async function normaliseTail(pipe: PlanePipe, timeoutMs = 60_000): Promise<NormalisedJpeg | JpegPart | null> {
  const tail = new PipeTail(pipe, Date.now() + timeoutMs);
  const offer = await tail.offer();
  if (!offer) return null;
  // The last part of the entropy decoding first: the head decodes the rest meanwhile.
  if (offer.split) decodeSplitTail(offer.split.bytes, offer.split.plan);
  const { width, height, orientation } = offer.target;
  const cw = (width + 1) >> 1;
  const ch = (height + 1) >> 1;
  const streams = offer.planes.map((p, i) => {
    const src = { width: p.width, height: p.height, stride: p.stride, channels: 1, data: new Uint8Array(offer.memory[i]!) };
    return StreamedResample.of(src, i === 0 ? width : cw, i === 0 ? height : ch);
  });
  /** Output rows up to `yRows` of Y and `cRows` of Cb and Cr, waiting for the decoder where it has to. */
  const fill = (yRows: number, cRows: number) => {
    streams.forEach((stream, i) => {
      const rows = i === 0 ? yRows : cRows;
      stream.advance(tail.rowsOf(offer.planes[i]!, stream.need(rows)), rows);
    });
  };
  try {
    const [y, cb, cr] = streams.map((s): Plane => ({ width: s.out.width, height: s.out.height, stride: s.out.stride, data: s.out.data }));
    if (orientation <= 1) {
      const image = { width, height, y: y!, cb: cb!, cr: cr! };
      // The first encode reads each MCU row as it is decoded, and ends early where the head took the rest
      // (its first part is then the answer); a retry at a lower quality has every row.
      tail.openRows(Math.ceil(height / 16));
      let end = -1;
      const beforeRow = (my: number) => {
        if (!tail.take(my)) return ((end = my), false);
        fill(Math.min(height, 16 * (my + 1)), Math.min(ch, 8 * (my + 1)));
        return true;
      };
      const first = encodeJpegPlanes(image, QUALITIES[0]!, beforeRow);
      if (end >= 0) return { part: "first", bytes: first, row: end, width, height };
      return encodeUnder8MB((quality) => (quality === QUALITIES[0] ? first : encodeJpegPlanes(image, quality)), width, height);
    }
    fill(height, ch);
    const oy = orientPlane(y!, orientation);
    const image = { width: oy.width, height: oy.height, y: oy, cb: orientPlane(cb!, orientation), cr: orientPlane(cr!, orientation) };
    return encodeUnder8MB((quality) => encodeJpegPlanes(image, quality), image.width, image.height);
  } catch (err) {
    if (err instanceof PipeAbandoned) return null;
    throw err;
  }
}

function encodeUnder8MB(encode: (quality: number) => Uint8Array, width: number, height: number): NormalisedJpeg {
  for (const quality of QUALITIES) {
    const jpeg = encode(quality);
    if (jpeg.length < SOCIAL_IMAGE.maxBytes) return { bytes: jpeg, width, height, mimeType: "image/jpeg" };
  }
  throw new ApiError("INVALID_IMAGE", "The image could not be compressed to a JPEG under 8 MB.");
}

const CORRUPT = Symbol("corrupt");
/** The planes went to the pipeline's tail, which resizes and encodes them; every row is decoded. */
class HandedOver {
  constructor(readonly planes: YCbCrImage) {}
}

/**
 * The head's help once every row is decoded (plane-pipe.ts, CLAIMS): the last of the output MCU rows the
 * tail has not begun (`takeRowsFrom`), resized from the shared planes and encoded from its restart marker
 * on, at the quality of the tail's first encode. Null when it took none. Should it throw, the tail's first
 * part does not join and the job runs again on one thread (functions/node/heavy-pool.ts logs it).
 */
function encodeRest(head: PipeHead, planes: YCbCrImage, width: number, height: number): JpegPart | null {
  const from = head.takeRowsFrom();
  if (from < 0) return null;
  const cw = (width + 1) >> 1;
  const ch = (height + 1) >> 1;
  const y = resizePlane(planes.y, width, height, 16 * from);
  const image = { width, height, y, cb: resizePlane(planes.cb, cw, ch, 8 * from), cr: resizePlane(planes.cr, cw, ch, 8 * from) };
  return { part: "rest", bytes: encodeJpegRowsFrom(image, QUALITIES[0]!, from), row: from, width, height };
}

/**
 * The JPEG -> JPEG fast path: YCbCr planes from the scaled decode, each resized (chroma straight to the
 * encoder's 4:2:0 size) and oriented on its own, never converted to RGB and back. Null (RGBA path instead)
 * for greyscale, RGB-stored and anything the TypeScript decoder leaves to photon, including corrupt data.
 */
function planesAtLeast(
  bytes: Uint8Array,
  storedW: number,
  storedH: number,
  orientation: number,
  head?: PipeHead,
): YCbCrImage | typeof CORRUPT | HandedOver | null {
  const sink = head?.sink({ width: storedW, height: storedH, orientation });
  let img: YCbCrImage | null;
  try {
    img = decodeJpegPlanes(bytes, storedW, storedH, sink);
  } catch {
    return CORRUPT; // corrupt by our reading: photon is more lenient with some damage, so the verdict stays its own
  }
  if (!img) return null;
  if (head?.streaming) {
    head.done();
    return new HandedOver(img);
  }
  const cw = (storedW + 1) >> 1;
  const ch = (storedH + 1) >> 1;
  const y = orientPlane(resizePlane(img.y, storedW, storedH), orientation);
  const cb = orientPlane(resizePlane(img.cb, cw, ch), orientation);
  const cr = orientPlane(resizePlane(img.cr, cw, ch), orientation);
  return { width: y.width, height: y.height, y, cb, cr };
}

/**
 * Decodes to at least `minWidth` x `minHeight` (stored orientation): small where the format allows
 * (decodeStoredAtLeast: a JPEG shrunk inside the IDCT, which keeps a 40 MP photo out of photon's WASM
 * memory, a large PNG box-filtered as it streams), else whole (decodeWhole: our WebP decoder or photon),
 * which then decides between a picture and a 422 exactly as before.
 */
function decodeAtLeast(bytes: Uint8Array, header: ImageHeader, minWidth: number, minHeight: number, limits: DecodeLimits): RgbaImage {
  return decodeStoredAtLeast(bytes, header, minWidth, minHeight, limits) ?? decodeWhole(bytes, header, limits);
}
