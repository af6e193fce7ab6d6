/**
 * vitest setup file: every suite's `fetch` has the answers of this API's documented operations checked against
 * the OpenAPI document the server serves (helpers/conformance.ts, `answerChecks`), so suites that reach the
 * embedded server or the Worker over real HTTP are held to the document as the harness's `app.request` is.
 * The check runs beside the test, from a clone of the answer, so timings the suites assert are not lengthened
 * by it (nor by loading the checker, which imports the whole app for its route table); a drifting answer fails
 * the test that received it when that test ends. Only fetches to `/`, `/health` and `/api/…` load the
 * checker, so suites that never make one pay nothing.
 */
import { afterEach } from "vitest";

const plain = globalThis.fetch;
let checks: Promise<typeof import("./conformance")> | undefined;
const pending: Array<Promise<void>> = [];
let check: ReturnType<typeof import("./conformance")["answerChecks"]> | undefined;

/** Documented operations are `/`, `/health` and paths under `/api/`; anything else goes straight through. */
const mayBeDocumented = (path: string) => path === "/" || path === "/health" || path.startsWith("/api/");

globalThis.fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
  const res = await plain(input, init);
  const url = new URL(input instanceof Request ? input.url : String(input));
  if (!mayBeDocumented(url.pathname) || (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase() === "HEAD") return res;
  const copy = res.status !== 304 && res.body !== null ? res.clone() : null;
  checks ??= import("./conformance");
  pending.push(
    checks.then((m) => {
      check ??= m.answerChecks(plain);
      const { method } = m.requestOf(input, init);
      return check(method, url, res, copy);
    }),
  );
  return res;
}) as typeof fetch;

afterEach(async () => {
  const failed = (await Promise.allSettled(pending.splice(0))).find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
});
