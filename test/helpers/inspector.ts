/**
 * A minimal Chrome DevTools protocol client for a Worker run by Miniflare with `inspectorPort`: enough to
 * collect garbage in the isolate and read its heap, so a memory measurement starts from live memory rather
 * than from whatever garbage V8 has not yet collected.
 *
 * @example
 * const inspector = await connectInspector(9229, () => fetch(`${edge.url}/`));
 * await inspector.collectGarbage();
 * const { usedMiB, backingStoreMiB } = await inspector.heapUsage();
 * const wasm = await inspector.wasmMemoryMiB(); // every WebAssembly memory of the isolate
 * inspector.close();
 */
import WebSocket from "ws";

export interface HeapUsage {
  /** The JS heap in use (objects, strings), MiB. */
  usedMiB: number;
  /** The JS heap V8 has reserved, MiB. */
  totalMiB: number;
  /** ArrayBuffer backing stores (typed arrays and WebAssembly memories), MiB; undefined where V8 does not say. */
  backingStoreMiB?: number;
}

export interface Inspector {
  collectGarbage(): Promise<void>;
  heapUsage(): Promise<HeapUsage>;
  /**
   * The size of every WebAssembly memory in the isolate, MiB (found with `Runtime.queryObjects`). V8's heap
   * statistics leave out what a memory grew by, and a memory never shrinks, so this is also its peak.
   */
  wasmMemoryMiB(): Promise<number>;
  close(): void;
}

/**
 * Connects to the first Worker the inspector at `port` (127.0.0.1) lists. workerd runs a collection only
 * when the isolate next has a task, so `wake` must give it one (a cheap request); it is called until the
 * collection is done.
 */
export async function connectInspector(port: number, wake: () => Promise<unknown>): Promise<Inspector> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as Array<{ webSocketDebuggerUrl: string }>;
  if (!targets[0]) throw new Error(`no Worker listed by the inspector on port ${port}`);
  const ws = new WebSocket(targets[0].webSocketDebuggerUrl);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  let nextId = 1;
  let contextId: number | undefined;
  const waiting = new Map<number, { resolve: (value: any) => void; reject: (err: Error) => void }>();
  ws.on("message", (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: any };
    if (message.method === "Runtime.executionContextCreated") contextId = message.params.context.id;
    if (message.id === undefined) return;
    const call = waiting.get(message.id);
    waiting.delete(message.id);
    if (message.error) call?.reject(new Error(message.error.message));
    else call?.resolve(message.result);
  });
  const send = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<any>((resolve, reject) => {
      const id = nextId++;
      waiting.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  const MiB = 1024 * 1024;
  return {
    async collectGarbage() {
      let done = false;
      const collected = send("HeapProfiler.collectGarbage").finally(() => {
        done = true;
      });
      while (!done) {
        await wake().catch(() => undefined);
        await Promise.race([collected, new Promise((r) => setTimeout(r, 50))]);
      }
      await collected;
    },
    async heapUsage() {
      const usage = (await send("Runtime.getHeapUsage")) as { usedSize: number; totalSize: number; backingStorageSize?: number };
      return {
        usedMiB: usage.usedSize / MiB,
        totalMiB: usage.totalSize / MiB,
        backingStoreMiB: usage.backingStorageSize === undefined ? undefined : usage.backingStorageSize / MiB,
      };
    },
    async wasmMemoryMiB() {
      if (contextId === undefined) {
        // The context is announced once Runtime is enabled, which (like a collection) needs the isolate awake.
        const enabled = send("Runtime.enable");
        while (contextId === undefined) {
          await wake().catch(() => undefined);
          await new Promise((r) => setTimeout(r, 50));
        }
        await enabled;
      }
      const prototype = await send("Runtime.evaluate", { expression: "WebAssembly.Memory.prototype", contextId });
      const memories = await send("Runtime.queryObjects", { prototypeObjectId: prototype.result.objectId });
      const sum = await send("Runtime.callFunctionOn", {
        objectId: memories.objects.objectId,
        functionDeclaration: "function () { return this.reduce((sum, memory) => sum + memory.buffer.byteLength, 0); }",
        returnByValue: true,
      });
      return sum.result.value / MiB;
    },
    close() {
      ws.close();
    },
  };
}
