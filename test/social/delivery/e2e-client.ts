/**
 * A small HTTP client for the end-to-end tests: the public API and the sandbox control routes of a running
 * server, with the dev key.
 */
import { makeJpeg } from "../../helpers/images";

export interface Target {
  accountId: string;
  status: string;
  attempts: number;
  nextAttemptAt: string | null;
  jobId: string | null;
  providerPostId: string | null;
  publishedAt: string | null;
  error: { code: string; message: string } | null;
}

export interface PostRecord {
  id: string;
  status: string;
  caption: string;
  hashtags: string[];
  imageUrls: string[];
  scheduledFor: string | null;
  accounts: Target[];
}

/** The post's target on `accountId`. */
export const targetOf = (post: PostRecord, accountId: string): Target => post.accounts.find((t) => t.accountId === accountId)!;

export interface SandboxItem {
  id: string;
  caption: string;
  hashtags: string[];
  imageUrls: string[];
  createdAt: string;
}

export function e2eClient(baseUrl: string, apiKey: string) {
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json().catch(() => null)) as { data?: unknown; error?: unknown } | null;
    if (!res.ok) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(json)}`);
    return json!.data as never;
  };
  let jpeg: string | undefined;
  return {
    connect: (platform: "pageplatform" | "photoplatform", name = `${platform} e2e`, platformAccountId?: string) =>
      call("POST", "/sandbox/accounts", { platform, name, platformAccountId }) as Promise<{
        id: string;
        tokenStatus: string;
        canPublish: boolean;
        platformAccountId: string;
      }>,
    accounts: async () =>
      (await (call("GET", "/api/v1/social/accounts") as Promise<{ accounts: Array<{ id: string; tokenStatus: string; canPublish: boolean }> }>)).accounts,
    fault: (accountId: string, kind: string, times = 1) => call("POST", "/sandbox/faults", { accountId, kind, times }),
    sandboxPosts: async (accountId: string) =>
      (await (call("GET", `/sandbox/posts?accountId=${encodeURIComponent(accountId)}`) as Promise<{ items: SandboxItem[] }>)).items,
    createPost: (body: Record<string, unknown>) =>
      call("POST", "/api/v1/social/posts", body, { "idempotency-key": crypto.randomUUID() }) as Promise<PostRecord>,
    getPost: (id: string) => call("GET", `/api/v1/social/posts/${id}`) as Promise<PostRecord>,
    listPosts: async () => (await (call("GET", "/api/v1/social/posts?limit=100") as Promise<{ items: PostRecord[] }>)).items,
    cancelPost: (id: string) => call("DELETE", `/api/v1/social/posts/${id}`) as Promise<PostRecord>,
    /** A 4:5 JPEG as base64, accepted by both platforms. */
    async image() {
      jpeg ??= (await makeJpeg(800, 1000)).toString("base64");
      return { base64: jpeg, mimeType: "image/jpeg" };
    },
  };
}

export type E2eClient = ReturnType<typeof e2eClient>;

/** Polls until `check` returns a value (not undefined/false), or throws after `timeoutMs` with the last seen state. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const isSettled = (post: PostRecord) =>
  post.accounts.every((t) => t.status === "published" || t.status === "cancelled" || (t.status === "failed" && !t.nextAttemptAt));

/** The post once every target has left pending/publishing and has no retry scheduled. */
export function settled(client: E2eClient, postId: string, timeoutMs: number): Promise<PostRecord> {
  return waitFor(
    `post ${postId} to settle`,
    async () => {
      const post = await client.getPost(postId);
      return isSettled(post) ? post : undefined;
    },
    timeoutMs,
  );
}

/** Many posts settled, watched through one list request per poll instead of one request per post. */
export function allSettled(client: E2eClient, postIds: readonly string[], timeoutMs: number): Promise<PostRecord[]> {
  return waitFor(
    `${postIds.length} posts to settle`,
    async () => {
      const byId = new Map((await client.listPosts()).map((p) => [p.id, p]));
      const posts = postIds.map((id) => byId.get(id));
      return posts.every((p) => p && isSettled(p)) ? (posts as PostRecord[]) : undefined;
    },
    timeoutMs,
    300,
  );
}
