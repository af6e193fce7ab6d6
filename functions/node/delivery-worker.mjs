// The delivery thread's entry (./delivery-thread.ts starts it): a worker thread does not take the server's
// TypeScript loader, so it registers tsx itself and loads ./delivery-worker.ts.
import { register } from "tsx/esm/api";

register();
await import("./delivery-worker.ts");
