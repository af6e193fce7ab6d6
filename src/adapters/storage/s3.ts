/**
 * The storage port on an S3-compatible bucket (Cloudflare R2, AWS S3, MinIO) with @aws-sdk/client-s3.
 * Path-style addressing, so an endpoint such as `https://<account>.r2.cloudflarestorage.com` or a local
 * server works without per-bucket DNS. Objects are public through `publicBaseUrl` (an R2 custom domain or
 * public bucket URL, a CDN in front of S3), which is what `put` returns and the platforms fetch.
 *
 * Portable: the SDK's fetch handler and WebCrypto signer run unchanged on workerd and Node.
 *
 * @example
 * const storage = S3Storage({
 *   endpoint: "https://acc.r2.cloudflarestorage.com", region: "auto", bucket: "media",
 *   accessKeyId, secretAccessKey, publicBaseUrl: "https://media.example.com",
 * });
 * const url = await storage.put("media/u1/abc.jpg", bytes, "image/jpeg"); // https://media.example.com/media/u1/abc.jpg
 */
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand, S3Client, type S3ServiceException } from "@aws-sdk/client-s3";
import type { Storage } from "../../services";

export interface S3StorageConfig {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Where the bucket's objects are publicly readable, without a trailing slash. */
  publicBaseUrl: string;
}

export interface S3StorageOptions {
  /** Seconds a CDN and browsers may cache an object (keys are never reused). Default one year. */
  cacheSeconds?: number;
  /** Attempts per request, retries included (the SDK's default is 3). */
  maxAttempts?: number;
}

export function S3Storage(cfg: S3StorageConfig, options: S3StorageOptions = {}): Storage {
  const client = new S3Client({
    endpoint: cfg.endpoint,
    region: cfg.region,
    forcePathStyle: true,
    credentials: { accessKeyId: cfg.accessKeyId, secretAccessKey: cfg.secretAccessKey },
    maxAttempts: options.maxAttempts ?? 3,
    // R2 and most S3-compatible servers reject or ignore the SDK's default CRC32 trailers; send a checksum
    // only where the S3 API requires one.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
  });
  const base = cfg.publicBaseUrl.replace(/\/+$/, "");
  const cacheControl = `public, max-age=${options.cacheSeconds ?? 31_536_000}, immutable`;
  const urlFor = (key: string) => `${base}/${checkKey(key).split("/").map(encodeURIComponent).join("/")}`;

  return {
    async put(key, bytes, contentType) {
      await client.send(
        new PutObjectCommand({
          Bucket: cfg.bucket,
          Key: checkKey(key),
          Body: bytes,
          ContentType: contentType,
          ContentLength: bytes.byteLength,
          CacheControl: cacheControl,
        }),
      );
      return urlFor(key);
    },
    async get(key) {
      try {
        const out = await client.send(new GetObjectCommand({ Bucket: cfg.bucket, Key: checkKey(key) }));
        if (!out.Body) return null;
        return { bytes: await out.Body.transformToByteArray(), contentType: out.ContentType ?? "application/octet-stream" };
      } catch (err) {
        if (isNotFound(err)) return null;
        throw err;
      }
    },
    async delete(key) {
      // S3 answers 204 whether or not the object existed, so deleting twice is fine.
      await client.send(new DeleteObjectCommand({ Bucket: cfg.bucket, Key: checkKey(key) }));
    },
    urlFor,
  };
}

/** Keys are relative paths of plain segments: no leading slash, no empty, "." or ".." segment, no control characters. */
function checkKey(key: string): string {
  const bad =
    key.length === 0 ||
    key.length > 1024 ||
    /[\u0000-\u001f\u007f\\]/.test(key) ||
    key.split("/").some((segment) => segment === "" || segment === "." || segment === "..");
  if (bad) throw new Error(`invalid storage key ${JSON.stringify(key.slice(0, 80))}`);
  return key;
}

function isNotFound(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const status = (err as Partial<S3ServiceException>).$metadata?.httpStatusCode;
  return err.name === "NoSuchKey" || err.name === "NotFound" || status === 404;
}
