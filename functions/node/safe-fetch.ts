/**
 * The SafeFetcher for Node: the same URL rules, redirect refusal and streaming cap as the edge twin
 * (src/adapters/fetch), sent through an undici Agent whose DNS lookup refuses the connection when ANY
 * address a name resolves to is not public. The check runs inside the connect step, on the very addresses
 * the socket would use, so a name that resolves to 127.0.0.1 (127.0.0.1.nip.io, DNS rebinding) is refused
 * without a packet being sent to it. IP literals never reach lookup; the URL rules check those.
 */
import dns from "node:dns";
import type { LookupAddress } from "node:dns";
import { rootCertificates } from "node:tls";
import { Agent, request as undiciRequest, fetch as undiciFetch } from "undici";
import { ApiError } from "../../src/http/errors";
import { createSafeFetcher, type FetchLike, type SafeFetchOptions, type WebhookPost } from "../../src/adapters/fetch/fetch-core";
import { addressProblem } from "../../src/adapters/fetch/url-policy";
import type { SafeFetcher } from "../../src/services";

export interface NodeFetcherOptions extends SafeFetchOptions {
  /** How names are resolved; default `dns.lookup(name, {all: true})`. Tests inject answers here. */
  resolve?: (hostname: string) => Promise<LookupAddress[]>;
  /** TCP + TLS connect deadline. Default 5 s. */
  connectTimeoutMs?: number;
}

export interface NodeFetcher extends SafeFetcher {
  /** Closes pooled connections (tests, graceful shutdown). */
  close(): Promise<void>;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * @example
 * const fetcher = createNodeFetcher();
 * await fetcher.fetchBytes("https://127.0.0.1.nip.io/a.png"); // throws 422: the host resolves to a loopback address
 */
export function createNodeFetcher(options: NodeFetcherOptions = {}): NodeFetcher {
  const resolve = options.resolve ?? ((hostname: string) => dns.promises.lookup(hostname, { all: true, verbatim: true }));
  const allowedHosts = new Set((options.testAllow?.origins ?? []).map((o) => new URL(o).hostname.replace(/^\[|\]$/g, "")));

  const lookup = (hostname: string, lookupOptions: dns.LookupOptions, callback: LookupCallback): void => {
    resolve(hostname).then(
      (resolved) => {
        let answers = resolved;
        if (answers.length === 0) return callback(notFound(hostname), []);
        // `localhost` reaches this lookup only as a webhook endpoint allowed by WEBHOOK_ALLOW_LOOPBACK (the URL
        // rules refuse it everywhere else), and then only its loopback addresses are used.
        const loopbackOnly = options.allowLoopbackWebhooks === true && hostname === "localhost";
        if (loopbackOnly) answers = answers.filter((a) => addressProblem(a.address) === "a loopback address");
        if (!allowedHosts.has(hostname) && !loopbackOnly) {
          for (const answer of answers) {
            const problem = addressProblem(answer.address);
            if (problem) {
              return callback(
                new ApiError(
                  "INVALID_IMAGE_URL",
                  `The image URL's host resolves to ${problem}; only public addresses may be fetched.`,
                ) as unknown as NodeJS.ErrnoException,
                [],
              );
            }
          }
        }
        const family = lookupOptions.family === 4 || lookupOptions.family === 6 ? lookupOptions.family : 0;
        const usable = family ? answers.filter((a) => a.family === family) : answers;
        if (usable.length === 0) return callback(notFound(hostname), []);
        if (lookupOptions.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: NodeJS.ErrnoException) => callback(err, []),
    );
  };

  const ca = options.testAllow?.ca;
  const agent = new Agent({
    connect: {
      lookup: lookup as never,
      timeout: options.connectTimeoutMs ?? 5_000,
      ...(ca ? { ca: [...rootCertificates, ca] } : {}),
    },
  });

  const send: FetchLike = async (url, init) =>
    (await undiciFetch(url, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent })) as unknown as Response;

  // Webhook POSTs by undici's request, a few times cheaper per call than its fetch (no WHATWG streams): a burst
  // of messages is sent by the server's thread beside everything else. It follows no redirects.
  const postWebhook: WebhookPost = async (url, init) => {
    const answer = await undiciRequest(url, { method: "POST", headers: init.headers, body: init.body, signal: init.signal, dispatcher: agent });
    const retryAfter = answer.headers["retry-after"];
    await answer.body.dump({ limit: init.maxAnswerBytes }).catch(() => undefined);
    return { status: answer.statusCode, retryAfter: (Array.isArray(retryAfter) ? retryAfter[0] : retryAfter) ?? null };
  };

  return {
    ...createSafeFetcher(send, { ...options, postWebhook }),
    close: () => agent.close(),
  };
}

function notFound(hostname: string): NodeJS.ErrnoException {
  const err: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
  err.code = "ENOTFOUND";
  return err;
}
