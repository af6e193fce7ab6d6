/**
 * The Graph error bodies the sandbox answers with: the real codes and wording of Meta's documentation, so
 * the adapters' classification is exercised exactly as the platform would exercise it.
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";

export interface SandboxGraphError {
  status: ContentfulStatusCode;
  message: string;
  type: string;
  code: number;
  error_subcode?: number;
  is_transient: boolean;
  error_user_title?: string;
  error_user_msg?: string;
}

export type FaultKind = "transient" | "rate_limit" | "auth" | "invalid" | "ambiguous" | "slow";
export const FAULT_KINDS: readonly FaultKind[] = ["transient", "rate_limit", "auth", "invalid", "ambiguous", "slow"];

const oauth = (code: number, message: string, extra: Partial<SandboxGraphError> = {}): SandboxGraphError => ({
  status: 400,
  message,
  type: "OAuthException",
  code,
  is_transient: false,
  ...extra,
});

export const GRAPH_ERRORS = {
  badToken: oauth(190, "Invalid OAuth access token - Cannot parse access token"),
  passwordChanged: oauth(
    190,
    "Error validating access token: The session has been invalidated because the user changed their password or Facebook has changed the session for security reasons.",
    { error_subcode: 460 },
  ),
  noPermission: oauth(200, "(#200) Permissions error"),
  unknownObject: oauth(
    100,
    "Unsupported get request. Object does not exist, cannot be loaded due to missing permissions, or does not support this operation.",
    { error_subcode: 33 },
  ),
  unknownEdge: oauth(100, "(#100) Tried accessing nonexisting field"),
  invalidParam: oauth(100, "(#100) Invalid parameter"),
  pageTransient: { ...oauth(2, "An unexpected error has occurred. Please retry your request later.", { is_transient: true }), status: 500 as const },
  photoTransient: {
    ...oauth(-1, "An unexpected error has occurred. Please retry your request later.", { error_subcode: 2207001, is_transient: true }),
    status: 500 as const,
  },
  pageRateLimit: oauth(32, "Page request limit reached"),
  photoRateLimit: oauth(80002, "There have been too many calls to this Instagram account. Wait a bit and try again.", { is_transient: true }),
  photoQuota: oauth(9, "Application request limit reached", {
    error_subcode: 2207042,
    error_user_title: "Maximum posts reached",
    error_user_msg: "You have reached the maximum number of posts allowed for the Content Publishing API.",
  }),
  pageImageUnfetchable: oauth(324, "(#324) Missing or invalid image file"),
  photoImageUnfetchable: oauth(9004, "Only photo or video can be accepted as media type.", {
    error_subcode: 2207052,
    error_user_title: "Media download has failed",
    error_user_msg: "The media could not be fetched from this URI.",
  }),
  notReady: oauth(9007, "Media ID is not available", {
    error_subcode: 2207027,
    error_user_title: "Media not ready for publishing",
    error_user_msg: "The media is not ready for publishing, please wait for a moment.",
  }),
  containerUsed: oauth(100, "(#100) The media container has already been published or cannot be published."),
  /** Too many calls from one client address (limits.ts): Graph's application rate limit, as a 429. */
  clientRateLimit: { ...oauth(4, "(#4) Application request limit reached", { is_transient: true }), status: 429 as const },
} satisfies Record<string, SandboxGraphError>;

export function graphError(c: Context, error: SandboxGraphError) {
  const { status, ...body } = error;
  const fbtrace_id = `Sbx${crypto.randomUUID().replace(/-/g, "").slice(0, 20)}`;
  return c.json({ error: { ...body, fbtrace_id } }, status);
}

/** The error a fault of `kind` produces on a publishing call of `platform`. */
export function faultError(kind: "transient" | "rate_limit" | "auth" | "invalid", platform: string): SandboxGraphError {
  const page = platform === "pageplatform";
  switch (kind) {
    case "transient":
      return page ? GRAPH_ERRORS.pageTransient : GRAPH_ERRORS.photoTransient;
    case "rate_limit":
      return page ? GRAPH_ERRORS.pageRateLimit : GRAPH_ERRORS.photoRateLimit;
    case "auth":
      return GRAPH_ERRORS.passwordChanged;
    case "invalid":
      return GRAPH_ERRORS.invalidParam;
  }
}
