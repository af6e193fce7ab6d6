// Piscina's entry for a heavy-work thread. The thread does not inherit the request thread's TypeScript
// loader when the process was not started through tsx (a test runner, for one), so it registers tsx itself.
import { register } from "tsx/esm/api";

register();
const { runTask } = await import("./heavy-thread.ts");
export default runTask;
