/**
 * A minimal S3-protocol server for tests and `npm run dev:edge`: PutObject, GetObject, HeadObject and
 * DeleteObject, path-style (`/<bucket>/<key>`), objects in memory (and, with `dir`, also on disk, so a
 * restart keeps them). Every request must carry a valid AWS Signature V4 for the
 * configured credentials (the signature is recomputed, the payload hash checked), unless it is an unsigned
 * GET/HEAD on a bucket created with `publicRead` (a public bucket, which is what S3_PUBLIC_BASE_URL points at).
 * Errors are S3's XML documents (NoSuchKey, NoSuchBucket, SignatureDoesNotMatch, ...).
 *
 * @example
 * const s3 = await startS3Fake({ buckets: ["media"] });
 * const storage = S3Storage({ ...s3.credentials, bucket: "media", endpoint: s3.endpoint, region: s3.region, publicBaseUrl: `${s3.endpoint}/media` });
 * await s3.close();
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface S3FakeOptions {
  buckets: string[];
  region?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Serve unsigned GET/HEAD (a public bucket). Default true. */
  publicRead?: boolean;
  /** Keep objects in this directory too (loaded at start); default: memory only. */
  dir?: string;
}

export interface FakeObject {
  bytes: Buffer;
  contentType: string;
  cacheControl?: string;
  etag: string;
  lastModified: Date;
}

export interface S3RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  signed: boolean;
  status: number;
}

export interface S3Fake {
  /** e.g. "http://127.0.0.1:40123" */
  endpoint: string;
  region: string;
  credentials: { accessKeyId: string; secretAccessKey: string };
  /** Objects by "<bucket>/<key>". */
  objects: Map<string, FakeObject>;
  requests: S3RecordedRequest[];
  close(): Promise<void>;
}

export async function startS3Fake(options: S3FakeOptions): Promise<S3Fake> {
  const region = options.region ?? "us-east-1";
  const credentials = { accessKeyId: options.accessKeyId ?? "AKIDTESTFAKE", secretAccessKey: options.secretAccessKey ?? "fake-secret-for-tests-only" };
  const buckets = new Set(options.buckets);
  const objects = options.dir ? await loadObjects(options.dir) : new Map<string, FakeObject>();
  const requests: S3RecordedRequest[] = [];

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => sendError(res, 500, "InternalError", String(err)));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const rawPath = (req.url ?? "/").split("?")[0]!;
    const method = req.method ?? "GET";
    const signed = req.headers.authorization !== undefined;
    const record = (status: number) => requests.push({ method, path: rawPath, headers: req.headers, signed, status });

    const [bucket, ...rest] = rawPath.slice(1).split("/");
    const key = rest.map((s) => decodeURIComponent(s)).join("/");
    if (signed) {
      const problem = verifySignature(req, body, credentials, region);
      if (problem) return (record(403), sendError(res, 403, problem.code, problem.message, method));
    } else if (!(options.publicRead ?? true) || (method !== "GET" && method !== "HEAD")) {
      return (record(403), sendError(res, 403, "AccessDenied", "Anonymous requests may only read.", method));
    }
    if (!bucket || !buckets.has(bucket)) return (record(404), sendError(res, 404, "NoSuchBucket", "The specified bucket does not exist.", method));
    if (!key) return (record(400), sendError(res, 400, "InvalidRequest", "This fake serves objects only.", method));
    const id = `${bucket}/${key}`;

    switch (method) {
      case "PUT": {
        if (req.headers["x-amz-copy-source"]) return (record(501), sendError(res, 501, "NotImplemented", "CopyObject is not supported."));
        const etag = `"${createHash("md5").update(body).digest("hex")}"`;
        const object: FakeObject = {
          bytes: body,
          contentType: req.headers["content-type"] ?? "binary/octet-stream",
          cacheControl: req.headers["cache-control"],
          etag,
          lastModified: new Date(),
        };
        if (options.dir) await saveObject(options.dir, id, object);
        objects.set(id, object);
        record(200);
        res.writeHead(200, { ETag: etag }).end();
        return;
      }
      case "GET":
      case "HEAD": {
        const object = objects.get(id);
        if (!object) return (record(404), sendError(res, 404, "NoSuchKey", "The specified key does not exist.", method));
        record(200);
        res.writeHead(200, {
          "Content-Type": object.contentType,
          "Content-Length": String(object.bytes.length),
          ETag: object.etag,
          "Last-Modified": object.lastModified.toUTCString(),
          ...(object.cacheControl ? { "Cache-Control": object.cacheControl } : {}),
        });
        res.end(method === "GET" ? object.bytes : undefined);
        return;
      }
      case "DELETE":
        if (options.dir) await removeObject(options.dir, id);
        objects.delete(id);
        record(204);
        res.writeHead(204).end();
        return;
      default:
        return (record(405), sendError(res, 405, "MethodNotAllowed", `${method} is not supported.`, method));
    }
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region,
    credentials,
    objects,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Recomputes the SigV4 signature of a header-signed request; returns the S3 error to send, or null. */
function verifySignature(
  req: IncomingMessage,
  body: Buffer,
  creds: { accessKeyId: string; secretAccessKey: string },
  region: string,
): { code: string; message: string } | null {
  const auth = /^AWS4-HMAC-SHA256 Credential=([^,]+), ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(req.headers.authorization ?? "");
  if (!auth) return { code: "AuthorizationHeaderMalformed", message: "Expected an AWS4-HMAC-SHA256 Authorization header." };
  const [accessKeyId, date, scopeRegion, service, terminator] = auth[1]!.split("/");
  if (accessKeyId !== creds.accessKeyId) return { code: "InvalidAccessKeyId", message: "The AWS access key id does not exist in our records." };
  if (scopeRegion !== region || service !== "s3" || terminator !== "aws4_request") {
    return { code: "AuthorizationHeaderMalformed", message: `The credential scope must be <date>/${region}/s3/aws4_request.` };
  }
  const amzDate = String(req.headers["x-amz-date"] ?? "");
  if (!amzDate.startsWith(date ?? "-")) return { code: "AuthorizationHeaderMalformed", message: "x-amz-date does not match the credential date." };
  const payloadHash = String(req.headers["x-amz-content-sha256"] ?? "");
  if (payloadHash !== "UNSIGNED-PAYLOAD" && payloadHash !== sha256Hex(body)) {
    return { code: "XAmzContentSHA256Mismatch", message: "The provided 'x-amz-content-sha256' header does not match what was computed." };
  }

  const signedHeaders = auth[2]!.split(";");
  const url = new URL(req.url ?? "/", "http://fake");
  const query = [...url.searchParams]
    .map(([k, v]) => [rfc3986(k), rfc3986(v)] as const)
    .sort(([a, av], [b, bv]) => (a === b ? (av < bv ? -1 : 1) : a < b ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join("&");
  const canonicalHeaders = signedHeaders.map((name) => `${name}:${headerValue(req.headers[name]).trim().replace(/\s+/g, " ")}\n`).join("");
  const canonicalRequest = [req.method, url.pathname, query, canonicalHeaders, signedHeaders.join(";"), payloadHash].join("\n");
  const scope = `${date}/${region}/s3/aws4_request`;
  const stringToSign = ["AWS4-HMAC-SHA256", amzDate, scope, sha256Hex(Buffer.from(canonicalRequest))].join("\n");
  let key: Buffer = hmac(`AWS4${creds.secretAccessKey}`, date!);
  for (const part of [region, "s3", "aws4_request"]) key = hmac(key, part);
  const expected = createHmac("sha256", key).update(stringToSign).digest();
  const given = Buffer.from(auth[3]!, "hex");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { code: "SignatureDoesNotMatch", message: "The request signature we calculated does not match the signature you provided." };
  }
  return null;
}

function headerValue(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(",") : (value ?? "");
}

function rfc3986(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

function sha256Hex(data: Buffer): string {
  return createHash("sha256").update(data).digest("hex");
}

function sendError(res: ServerResponse, status: number, code: string, message: string, method = "GET"): void {
  if (res.headersSent) return;
  const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error>`;
  res.writeHead(status, { "Content-Type": "application/xml" }).end(method === "HEAD" ? undefined : xml);
}

function escapeXml(text: string): string {
  return text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** On disk, each object is `<sha256 of bucket/key>.bin` with its metadata beside it in `.json`. */
const objectFile = (dir: string, id: string) => join(dir, createHash("sha256").update(id).digest("hex"));

async function saveObject(dir: string, id: string, object: FakeObject): Promise<void> {
  const file = objectFile(dir, id);
  await writeFile(`${file}.bin`, object.bytes);
  const { bytes: _bytes, ...meta } = object;
  await writeFile(`${file}.json`, JSON.stringify({ id, ...meta }));
}

async function removeObject(dir: string, id: string): Promise<void> {
  const file = objectFile(dir, id);
  await Promise.all([rm(`${file}.bin`, { force: true }), rm(`${file}.json`, { force: true })]);
}

async function loadObjects(dir: string): Promise<Map<string, FakeObject>> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const objects = new Map<string, FakeObject>();
  for (const name of await readdir(dir)) {
    if (!name.endsWith(".json")) continue;
    const base = join(dir, name.slice(0, -".json".length));
    const meta = JSON.parse(await readFile(`${base}.json`, "utf8")) as Omit<FakeObject, "bytes" | "lastModified"> & { id: string; lastModified: string };
    const bytes = await readFile(`${base}.bin`).catch(() => null);
    if (bytes)
      objects.set(meta.id, {
        bytes,
        contentType: meta.contentType,
        cacheControl: meta.cacheControl,
        etag: meta.etag,
        lastModified: new Date(meta.lastModified),
      });
  }
  return objects;
}
