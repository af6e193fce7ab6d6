/**
 * A minimal binding to HarfBuzz's WebAssembly build (the `harfbuzz.wasm` that harfbuzzjs ships), talking to its
 * exported C functions directly.
 *
 * Why not harfbuzzjs's own JS wrapper: it instantiates itself at import time (fetching the .wasm next to the
 * module) and registers JS callbacks with Emscripten's `addFunction`, which compiles a small WebAssembly
 * module from bytes at run time. workerd forbids that ("Wasm code generation disallowed by embedder"), so the
 * wrapper cannot even be imported in a Worker. Shaping needs no callbacks: the calls below pass only numbers
 * and pointers, and glyph outlines come from the font's `glyf` table (./glyf.ts) instead of draw callbacks.
 *
 * @example
 * const hb = await instantiateHarfBuzz(wasmModuleOrBytes);
 * const font = hb.loadFont(ttfBytes);
 * const glyphs = hb.shape(font, "विचार", { script: "Deva", language: "hi" });
 */

/** One shaped glyph, in font units (HarfBuzz's default scale is the face's units per em). */
export interface ShapedGlyph {
  /** Glyph id in the font (0 = .notdef, i.e. the font lacks the character). */
  gid: number;
  /** UTF-16 index of the first code unit of the cluster this glyph belongs to. */
  cluster: number;
  xAdvance: number;
  xOffset: number;
  yOffset: number;
}

/** A font loaded into HarfBuzz: pointers into its memory, kept for the life of the process/isolate. */
export interface HbFont {
  ptr: number;
  upem: number;
  /** From HarfBuzz's horizontal font extents, font units, y up (descender is negative). */
  ascender: number;
  descender: number;
}

export interface HarfBuzz {
  loadFont(bytes: Uint8Array): HbFont;
  shape(font: HbFont, text: string, props: { script: string; language: string }): ShapedGlyph[];
  /** The font's glyph for a code point, 0 when it has none. */
  glyphFor(font: HbFont, codePoint: number): number;
}

export type WasmBinary = WebAssembly.Module | ArrayBuffer | Uint8Array;

type Exports = Record<string, (...args: number[]) => number> & { memory: WebAssembly.Memory };

const HB_DIRECTION_LTR = 4;
const HB_MEMORY_MODE_READONLY = 1;
const GLYPH_RECORD_BYTES = 20; // hb_glyph_info_t and hb_glyph_position_t are both five 32-bit fields

function tag(s: string): number {
  return ((s.charCodeAt(0) << 24) | (s.charCodeAt(1) << 16) | (s.charCodeAt(2) << 8) | s.charCodeAt(3)) >>> 0;
}

async function instantiate(binary: WasmBinary, imports: WebAssembly.Imports): Promise<WebAssembly.Instance> {
  if (binary instanceof WebAssembly.Module) return WebAssembly.instantiate(binary, imports);
  const bytes = binary instanceof Uint8Array ? binary : new Uint8Array(binary);
  const { instance } = await WebAssembly.instantiate(bytes as Uint8Array<ArrayBuffer>, imports);
  return instance;
}

/**
 * Instantiates harfbuzz.wasm with the five host functions its Emscripten build imports, and runs its
 * constructors. In workerd pass the compiled Module (bytes cannot be compiled there); in Node, bytes.
 *
 * @example
 * const hb = await instantiateHarfBuzz(await readFile(require.resolve("harfbuzzjs/dist/harfbuzz.wasm")));
 */
export async function instantiateHarfBuzz(binary: WasmBinary): Promise<HarfBuzz> {
  let memory: WebAssembly.Memory | null = null;
  const fail = (what: string) => () => {
    throw new Error(`harfbuzz.wasm ${what}`);
  };
  const env = {
    _abort_js: fail("aborted"),
    _emscripten_runtime_keepalive_clear: () => {},
    _setitimer_js: () => 0,
    // malloc asks the host to grow linear memory; Emscripten's glue does the same with memory.grow.
    emscripten_resize_heap: (requested: number) => {
      const current = memory!.buffer.byteLength;
      const target = Math.min(2 ** 31, Math.max(requested >>> 0, Math.ceil(current * 1.2)));
      try {
        memory!.grow(Math.ceil((target - current) / 65536));
        return 1;
      } catch {
        return 0;
      }
    },
  };
  const instance = await instantiate(binary, { env, wasi_snapshot_preview1: { proc_exit: fail("exited") } });
  const x = instance.exports as unknown as Exports;
  memory = x.memory;
  x.__wasm_call_ctors!();

  const languages = new Map<string, number>();
  const u8 = () => new Uint8Array(memory!.buffer);
  const u32 = () => new Uint32Array(memory!.buffer);
  const i32 = () => new Int32Array(memory!.buffer);

  function language(code: string): number {
    let ptr = languages.get(code);
    if (ptr === undefined) {
      const str = x.malloc!(code.length + 1);
      u8().set([...code].map((c) => c.charCodeAt(0)).concat(0), str);
      ptr = x.hb_language_from_string!(str, -1); // interned by HarfBuzz, valid forever
      x.free!(str);
      languages.set(code, ptr);
    }
    return ptr;
  }

  return {
    loadFont(bytes) {
      // The blob points at memory we never free: fonts are loaded once and live as long as the isolate.
      const data = x.malloc!(bytes.byteLength);
      u8().set(bytes, data);
      const blob = x.hb_blob_create!(data, bytes.byteLength, HB_MEMORY_MODE_READONLY, 0, 0);
      const face = x.hb_face_create!(blob, 0);
      const ptr = x.hb_font_create!(face);
      const extents = x.malloc!(48);
      x.hb_font_get_h_extents!(ptr, extents);
      const [ascender, descender] = i32().subarray(extents >> 2, (extents >> 2) + 2);
      x.free!(extents);
      return { ptr, upem: x.hb_face_get_upem!(face), ascender: ascender!, descender: descender! };
    },

    shape(font, text, props) {
      const buffer = x.hb_buffer_create!();
      const str = x.malloc!(text.length * 2 + 2);
      try {
        const u16 = new Uint16Array(memory!.buffer, str, text.length);
        for (let i = 0; i < text.length; i++) u16[i] = text.charCodeAt(i);
        x.hb_buffer_add_utf16!(buffer, str, text.length, 0, text.length);
        x.hb_buffer_set_direction!(buffer, HB_DIRECTION_LTR);
        x.hb_buffer_set_script!(buffer, tag(props.script));
        x.hb_buffer_set_language!(buffer, language(props.language));
        x.hb_shape!(font.ptr, buffer, 0, 0);
        const count = x.hb_buffer_get_length!(buffer);
        const infos = x.hb_buffer_get_glyph_infos!(buffer, 0) >> 2;
        const positions = x.hb_buffer_get_glyph_positions!(buffer, 0) >> 2;
        const infoView = u32();
        const posView = i32();
        const glyphs: ShapedGlyph[] = [];
        for (let i = 0; i < count; i++) {
          const info = infos + (i * GLYPH_RECORD_BYTES) / 4;
          const pos = positions + (i * GLYPH_RECORD_BYTES) / 4;
          glyphs.push({ gid: infoView[info]!, cluster: infoView[info + 2]!, xAdvance: posView[pos]!, xOffset: posView[pos + 2]!, yOffset: posView[pos + 3]! });
        }
        return glyphs;
      } finally {
        x.free!(str);
        x.hb_buffer_destroy!(buffer);
      }
    },

    glyphFor(font, codePoint) {
      const out = x.malloc!(4);
      try {
        return x.hb_font_get_nominal_glyph!(font.ptr, codePoint, out) ? u32()[out >> 2]! : 0;
      } finally {
        x.free!(out);
      }
    },
  };
}
