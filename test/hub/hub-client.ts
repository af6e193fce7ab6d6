/**
 * In-process hub tests: the harness app with the platform fetch routed back into the app (so the hub's
 * OAuth calls and the adapters reach the sandbox without a port), and a small cookie-keeping browser
 * that sends Origin like a real one and reads CSRF tokens from the pages.
 *
 * @example
 * const t = await createHubTest(); const b = t.browser(); await b.signIn((await t.h.createUser()).userId);
 */
import { createTestApp, type TestApp, type TestAppOptions } from "../helpers/harness";
import { createLoginLink } from "../../src/hub/login-links";

export const BASE = "http://127.0.0.1:8787";

export interface HubTest {
  h: TestApp;
  logLines: string[];
  browser(): HubBrowser;
  /** A new user signed in, in a browser of their own: the user's key and ids, and `b`, that browser. */
  signedIn(): Promise<Awaited<ReturnType<TestApp["createUser"]>> & { b: HubBrowser }>;
}

export async function createHubTest(options: TestAppOptions = {}): Promise<HubTest> {
  const logLines: string[] = [];
  let app: TestApp["app"] | undefined;
  const h = await createTestApp({
    logLines,
    ...options,
    overrides: { platformFetch: async (input, init) => app!.request(String(input instanceof Request ? input.url : input), init), ...options.overrides },
  });
  app = h.app;
  return {
    h,
    logLines,
    browser: () => new HubBrowser(h),
    async signedIn() {
      const user = await h.createUser();
      const b = new HubBrowser(h);
      await b.signIn(user.userId);
      return { ...user, b };
    },
  };
}

export class HubBrowser {
  readonly cookies = new Map<string, string>();
  /** Every page body this browser received, for the "no secret ever shown" checks. */
  readonly bodies: string[] = [];
  constructor(readonly t: TestApp) {}

  async request(path: string, init: RequestInit & { origin?: string | null } = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size) headers.set("cookie", [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; "));
    if ((init.method ?? "GET") !== "GET" && init.origin !== null) headers.set("origin", init.origin ?? BASE);
    const url = path.startsWith("http") ? path : `${BASE}${path}`;
    const res = await this.t.app.request(url, { ...init, headers });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(";");
      const [name, ...value] = pair!.split("=");
      const expired = attrs.some((a) => /max-age=0/i.test(a.trim()) || /expires=thu, 01 jan 1970/i.test(a.trim()));
      if (expired || value.join("=") === "") this.cookies.delete(name!.trim());
      else this.cookies.set(name!.trim(), value.join("="));
    }
    return res;
  }

  async page(path: string): Promise<{ res: Response; html: string }> {
    const res = await this.request(path);
    const html = await res.text();
    this.bodies.push(html);
    return { res, html };
  }

  async post(
    path: string,
    form: Record<string, string | string[]>,
    init: { origin?: string | null; csrf?: string | null } = {},
  ): Promise<{ res: Response; html: string }> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) for (const one of [v].flat()) body.append(k, one);
    if (init.csrf !== null && !("_csrf" in form) && this.csrf) body.set("_csrf", init.csrf ?? this.csrf);
    const res = await this.request(path, { method: "POST", body, headers: { "content-type": "application/x-www-form-urlencoded" }, origin: init.origin });
    const html = await res.text();
    this.bodies.push(html);
    return { res, html };
  }

  csrf: string | null = null;

  /**
   * Follows a hub answer's redirects within this service (GET, as a browser does after a 303), returning the
   * page they lead to and each hop's status and Location; an answer that is not a redirect is returned as it is.
   */
  async follow(first: { res: Response; html: string }): Promise<{ res: Response; html: string; hops: Array<{ status: number; location: string }> }> {
    const hops: Array<{ status: number; location: string }> = [];
    let current = first;
    while ([301, 302, 303].includes(current.res.status) && hops.length < 5) {
      const location = current.res.headers.get("location")!;
      hops.push({ status: current.res.status, location });
      if (location.startsWith("http") && !location.startsWith(BASE)) break;
      current = await this.page(location);
    }
    return { ...current, hops };
  }

  /** Posts a form and follows its redirect to the page that answers it (post/redirect/get). */
  async submit(path: string, form: Record<string, string | string[]>, init: { origin?: string | null; csrf?: string | null } = {}) {
    return this.follow(await this.post(path, form, init));
  }

  /** Signs in through a fresh one-time link, as a person clicking it would. */
  async signIn(userId: string): Promise<void> {
    const link = await createLoginLink(this.t.services, userId);
    const token = new URL(link).searchParams.get("token")!;
    await this.page(`/hub/login?token=${token}`);
    const { res } = await this.post("/hub/login", { token }, { csrf: null });
    if (res.status !== 303) throw new Error(`sign-in failed: ${res.status}`);
    await this.refreshCsrf();
  }

  async refreshCsrf(): Promise<string> {
    const { html } = await this.page("/hub/keys");
    this.csrf = /name="_csrf" value="([^"]+)"/.exec(html)?.[1] ?? null;
    if (!this.csrf) throw new Error("no CSRF token on the keys page");
    return this.csrf;
  }

  /**
   * Runs "Connect pageplatform" through the sandbox consent page, granting `pageIds` (all when omitted); answers
   * the accounts page the callback's 303 leads to, with that 303 (`hops`) and the callback URL.
   */
  async connectSandbox(pageIds?: string[]): Promise<{ res: Response; html: string; callback: string; hops: Array<{ status: number; location: string }> }> {
    const start = await this.post("/hub/accounts/connect", {});
    const dialog = start.res.headers.get("location")!;
    const consent = await this.page(dialog);
    const hidden = Object.fromEntries([...consent.html.matchAll(/type="hidden" name="([^"]+)" value="([^"]*)"/g)].map((m) => [m[1]!, decodeHtml(m[2]!)]));
    const offered = [...consent.html.matchAll(/name="page" value="(\d+)"/g)].map((m) => m[1]!);
    const granted = await this.post(new URL(dialog).pathname, { ...hidden, page: pageIds ?? offered, decision: "allow" }, { csrf: null });
    const callback = granted.res.headers.get("location")!;
    return { ...(await this.follow(await this.page(callback))), callback };
  }
}

export function decodeHtml(s: string): string {
  return s
    .replace(/&amp;/g, "&")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">");
}
