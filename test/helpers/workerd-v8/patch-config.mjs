/**
 * Reads the binary Cap'n Proto workerd config that Miniflare writes to workerd's stdin, sets its `v8Flags`
 * (Config field @2, the root struct's third pointer) to the words of WORKERD_V8_FLAGS, and writes it out.
 * Miniflare has no option for V8 flags; `workerd.sh` runs this in front of workerd.
 *
 * The message is rewritten in place: the flags (a list of pointers, then each flag as a NUL-terminated byte
 * list) are appended to segment 0, whose size in the segment table grows by as many words; no existing
 * pointer moves, since every offset is relative to a position that stays where it was.
 */
import { readFileSync } from "node:fs";

const flags = (process.env.WORKERD_V8_FLAGS ?? "").split(/\s+/).filter(Boolean);
const input = readFileSync(0);
const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
const segments = view.getUint32(0, true) + 1;
const firstSize = view.getUint32(4, true);
const seg0 = (4 + 4 * segments + 7) & ~7; // the segment table, padded to a word
const word = (i) => seg0 + 8 * i;

const rootLo = view.getUint32(word(0), true);
const rootHi = view.getUint32(word(0) + 4, true);
if ((rootLo & 3) !== 0) throw new Error("the config's root is not a struct");
const struct = 1 + (rootLo >> 2);
const dataWords = rootHi & 0xffff;
const pointerWords = rootHi >>> 16;
if (pointerWords < 3) throw new Error("this workerd config has no v8Flags field");
const slot = struct + dataWords + 2;
if (view.getUint32(word(slot), true) !== 0 || view.getUint32(word(slot) + 4, true) !== 0) throw new Error("v8Flags is set already");

const texts = flags.map((f) => Buffer.from(`${f}\0`));
const textWords = texts.map((t) => Math.ceil(t.length / 8));
const extra = Buffer.alloc(8 * (flags.length + textWords.reduce((a, b) => a + b, 0)));
let at = flags.length;
texts.forEach((text, i) => {
  extra.writeUInt32LE(((at - (i + 1)) << 2) | 1, 8 * i); // list pointer: offset from the next word
  extra.writeUInt32LE(((text.length << 3) | 2) >>> 0, 8 * i + 4); // element size 2 (bytes), count
  text.copy(extra, 8 * at);
  at += textWords[i];
});

const out = Buffer.concat([input.subarray(0, word(firstSize)), extra, input.subarray(word(firstSize))]);
out.writeUInt32LE(firstSize + extra.length / 8, 4);
out.writeUInt32LE(((firstSize - (slot + 1)) << 2) | 1, word(slot)); // list of pointers at the old end
out.writeUInt32LE(((flags.length << 3) | 6) >>> 0, word(slot) + 4);
process.stdout.write(out);
