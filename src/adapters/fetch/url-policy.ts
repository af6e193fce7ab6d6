/**
 * The rules a user-given image URL must pass before any network I/O, and the address rule both fetchers
 * apply (the Node twin again on every address DNS returns). Portable: no Node modules.
 *
 * The URL is judged after WHATWG parsing, never as a raw string: the parser turns `0x7f.1`, `2130706433`,
 * `0177.0.0.1` and `①②⑦.0.0.1` into `127.0.0.1`, and `[::ffff:127.0.0.1]` into `[::ffff:7f00:1]`.
 */
import ipaddr from "ipaddr.js";
import { ApiError } from "../../lib/errors";

/**
 * Test-only allowance: exactly these origins (e.g. "https://127.0.0.1:4443") skip the host, address and port
 * rules, and `ca` is trusted for TLS. Only tests construct it; config and env never reach it.
 */
export interface TestAllowance {
  origins: string[];
  ca?: string;
}

const MAX_URL_LENGTH = 2048;

/** Names that only mean something inside a network (RFC 6761/6762/8375 and common private suffixes). */
const PRIVATE_SUFFIXES = ["localhost", "local", "internal", "home.arpa", "localdomain", "lan", "intranet", "corp", "private", "test", "invalid", "example"];

/** Wildcard-DNS services that answer any embedded IP (127.0.0.1.nip.io -> 127.0.0.1). Workers cannot check
 *  DNS answers, so these are refused by name everywhere; Node additionally checks every resolved address. */
const IP_ECHO_DOMAINS = ["nip.io", "sslip.io", "xip.io", "traefik.me", "localtest.me", "lvh.me", "vcap.me", "lacolhost.com", "fuf.me"];

/** IPv6 blocks ipaddr.js calls "unicast" that still reach IPv4 space or local networks. */
const IPV6_EXTRA_DENY: Array<[ipaddr.IPv6, number]> = [
  ipaddr.IPv6.parseCIDR("::/96"), // deprecated IPv4-compatible (::7f00:1 is 127.0.0.1)
  ipaddr.IPv6.parseCIDR("64:ff9b:1::/48"), // local-use NAT64 (RFC 8215)
];

const RANGE_WORDS: Record<string, string> = {
  loopback: "a loopback address",
  private: "a private network address",
  linkLocal: "a link-local address (cloud metadata lives here)",
  uniqueLocal: "a private network address",
  unspecified: "the unspecified address",
  multicast: "a multicast address",
  broadcast: "the broadcast address",
  carrierGradeNat: "a carrier-grade NAT address",
  reserved: "a reserved address",
  benchmarking: "a reserved address",
  ipv4Mapped: "an IPv4-mapped address",
  rfc6052: "a NAT64 address",
  rfc6145: "an IPv4-translated address",
  "6to4": "a 6to4 address",
  teredo: "a Teredo address",
};

/**
 * Why `address` (an IP literal, no brackets) may not be contacted, or null when it is public unicast.
 *
 * @example
 * addressProblem("10.0.0.1");         // "a private network address"
 * addressProblem("::ffff:7f00:1");    // "a loopback address" (mapped addresses are unwrapped first)
 * addressProblem("93.184.215.14");    // null
 */
export function addressProblem(address: string): string | null {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.process(address);
  } catch {
    return "not a valid IP address";
  }
  const range = parsed.range();
  if (range !== "unicast") return RANGE_WORDS[range] ?? "not a public address";
  if (parsed.kind() === "ipv6") {
    const v6 = parsed as ipaddr.IPv6;
    if (IPV6_EXTRA_DENY.some((cidr) => v6.match(cidr))) return "an IPv4-compatible or local NAT64 address";
    // Only 2000::/3 is allocated for global unicast; anything else is not a public Internet address.
    if (!v6.match(ipaddr.IPv6.parse("2000::"), 3)) return "not a public address";
  }
  return null;
}

/** True when `address` is public unicast. */
export function isPublicAddress(address: string): boolean {
  return addressProblem(address) === null;
}

/** The origins of a test allowance, normalised the way `URL.origin` prints them. */
export function allowedOrigins(allow?: TestAllowance): Set<string> {
  const set = new Set<string>();
  for (const origin of allow?.origins ?? []) set.add(new URL(origin).origin);
  return set;
}

/**
 * Parses and checks a user-given image URL. Throws ApiError INVALID_IMAGE_URL (422) with a sentence saying
 * what is wrong; never echoes credentials or the query string.
 *
 * @example
 * const url = checkImageUrl("https://cdn.example.com/a.jpg");
 * checkImageUrl("https://example.com:8443/a.jpg"); // throws: port 8443 is not allowed; images must be served on port 443
 */
export function checkImageUrl(raw: string, allowed: Set<string> = new Set()): URL {
  if (typeof raw !== "string" || raw.length === 0) throw bad("The image URL is empty.");
  if (raw.length > MAX_URL_LENGTH) throw bad(`The image URL is ${raw.length} characters long; it may be at most ${MAX_URL_LENGTH}.`);
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(raw)) throw bad("The image URL contains spaces, line breaks or control characters.");
  if (/^data:/i.test(raw)) throw bad("A data: URI is not an image URL; send the image as Base64 instead.");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad("The image URL is not a valid absolute URL.");
  }
  if (url.protocol !== "https:") throw bad(`The image URL must use https (it uses ${url.protocol.replace(/:$/, "").slice(0, 20)}).`);
  if (url.username || url.password) throw bad("The image URL must not contain credentials (user:password@host).");
  if (allowed.has(url.origin)) return url;
  if (url.port !== "") throw bad(`Port ${url.port} is not allowed; images must be served on port 443.`);
  const problem = hostProblem(url.hostname);
  if (problem) throw bad(`The image URL's host ${problem}.`);
  return url;
}

/**
 * Parses and checks a webhook endpoint's URL by the same rules as every outbound URL (https on port 443, no
 * credentials, public hosts only); with `allowLoopback` (WEBHOOK_ALLOW_LOOPBACK, local development) also
 * `http://127.0.0.1:<port>` and `http://localhost:<port>`. Throws a 422 naming the field `url`.
 *
 * @example
 * checkWebhookUrl("https://shop.example/hooks");         // URL
 * checkWebhookUrl("https://10.0.0.5/hooks");             // throws: the host is a private network address
 * checkWebhookUrl("http://127.0.0.1:9000/h", true);      // URL
 */
export function checkWebhookUrl(raw: string, allowLoopback = false): URL {
  const refuse = (message: string) => new ApiError("VALIDATION_FAILED", `url: ${message}`, { details: [{ path: "url", message }] });
  if (raw.length > MAX_URL_LENGTH) throw refuse(`must be at most ${MAX_URL_LENGTH} characters long`);
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(raw)) throw refuse("must not contain spaces, line breaks or control characters");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refuse("is not a valid absolute URL");
  }
  if (url.username || url.password) throw refuse("must not contain credentials (user:password@host)");
  // WHATWG escapes every other "#", so one in the href is the fragment's, even an empty one.
  if (url.href.includes("#")) throw refuse("must not contain a fragment (#…): it is never sent");
  if (url.port === "0") throw refuse("port 0 is not a port a receiver can listen on");
  if (allowLoopback && isLoopbackEndpoint(url)) return url;
  if (allowLoopback && url.hostname === "[::1]") throw refuse("for a receiver on this machine, use http://127.0.0.1:<port>/… or http://localhost:<port>/…");
  if (url.protocol !== "https:") throw refuse(`must use https (it uses ${url.protocol.replace(/:$/, "").slice(0, 20)})`);
  if (url.port !== "") throw refuse(`port ${url.port} is not allowed; webhooks are sent to port 443`);
  const problem = hostProblem(url.hostname);
  if (problem) throw refuse(`the host ${problem.replace("may be fetched", "may receive webhooks")}`);
  return url;
}

/** `http(s)://127.0.0.1:<port>` or `http(s)://localhost:<port>`: a receiver on this machine. */
export function isLoopbackEndpoint(url: URL): boolean {
  return (url.protocol === "http:" || url.protocol === "https:") && (url.hostname === "127.0.0.1" || url.hostname === "localhost");
}

/** Why a URL hostname (as WHATWG prints it) is not acceptable, or null. */
function hostProblem(hostname: string): string | null {
  const host = hostname.toLowerCase().replace(/\.+$/, "");
  if (host.startsWith("[") && host.endsWith("]")) {
    const why = addressProblem(host.slice(1, -1));
    return why ? `is ${why}; only public addresses may be fetched` : null;
  }
  // WHATWG already canonicalises numeric IPv4 forms; ipaddr.js also accepts the legacy ones, belt and braces.
  if (ipaddr.IPv4.isValid(host)) {
    const why = addressProblem(host);
    return why ? `is ${why}; only public addresses may be fetched` : null;
  }
  if (host === "") return "is missing";
  for (const suffix of PRIVATE_SUFFIXES) {
    if (host === suffix || host.endsWith(`.${suffix}`)) return `is a local or internal name (.${suffix}); only public hosts may be fetched`;
  }
  if (!host.includes(".")) return "must be a public domain name (single-label names resolve only inside a network)";
  for (const domain of IP_ECHO_DOMAINS) {
    if (host === domain || host.endsWith(`.${domain}`)) return `uses ${domain}, a service that maps names to arbitrary IP addresses`;
  }
  if (/^[0-9.]+$/.test(host) || /^0x/i.test(host)) return "is not a valid IP address or domain name";
  // WHATWG parses these; DNS has no such names (an empty label, or one that starts or ends with a hyphen).
  if (host.split(".").some((label) => label === "" || label.length > 63 || label.startsWith("-") || label.endsWith("-")))
    return "is not a valid domain name (an empty label, one over 63 characters, or one that starts or ends with a hyphen)";
  return null;
}

function bad(message: string): ApiError {
  return new ApiError("INVALID_IMAGE_URL", message);
}
