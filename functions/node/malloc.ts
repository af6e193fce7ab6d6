/**
 * Handing freed native memory back to the system (Linux with glibc). Node allocates every ArrayBuffer's
 * bytes with malloc, and image work frees many of 1 to 40 MB. glibc raises its mmap threshold to the size
 * of the largest such block freed (up to 32 MB) and then keeps up to twice that much free memory in each
 * arena; a worker thread's arena outlives the thread. After a burst of large images every heavy-work thread
 * leaves tens of MB behind in its arena (64 MB-aligned anonymous regions in /proc/<pid>/smaps), so an idle
 * server would stay well above its level before the burst. `malloc_trim(0)` releases
 * the free pages of every arena; it is called once the heavy-work threads have all ended.
 *
 * The call goes through koffi (a maintained FFI library) since Node has no API for it. Elsewhere (macOS,
 * musl, Windows, no koffi binary) this is a no-op.
 *
 * @example
 * pool.on("workerDestroy", () => { if (pool.threads.length === 0) void trimMalloc(); });
 */
let trim: Promise<((pad: number) => number) | null> | undefined;

/** Releases free malloc memory to the system; true when it was attempted (glibc only). */
export async function trimMalloc(): Promise<boolean> {
  trim ??= loadTrim();
  const call = await trim;
  if (!call) return false;
  call(0);
  return true;
}

async function loadTrim(): Promise<((pad: number) => number) | null> {
  if (process.platform !== "linux" || !glibc()) return null;
  try {
    const koffi = (await import("koffi")).default;
    const libc = koffi.load("libc.so.6");
    return libc.func("int malloc_trim(size_t pad)") as (pad: number) => number;
  } catch {
    return null;
  }
}

/** Whether this Node was built against glibc (its report names the glibc version it runs on). */
function glibc(): boolean {
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return typeof header?.glibcVersionRuntime === "string";
}
