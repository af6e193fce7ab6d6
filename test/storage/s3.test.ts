/**
 * S3Storage (src/adapters/storage/s3.ts) driving the real @aws-sdk/client-s3 against the S3-protocol fake,
 * which recomputes every SigV4 signature.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { S3Storage, type S3StorageConfig } from "../../src/adapters/storage/s3";
import { startS3Fake, type S3Fake } from "../../dev/s3-fake";
import { closedPort } from "../rate-limit/limits";
import { createTestApp } from "../helpers/harness";

let s3: S3Fake;
let cfg: S3StorageConfig;
const run = crypto.randomUUID();

beforeAll(async () => {
  s3 = await startS3Fake({ buckets: ["media"], region: "auto" });
  cfg = { endpoint: s3.endpoint, region: s3.region, bucket: "media", ...s3.credentials, publicBaseUrl: `${s3.endpoint}/media/` };
});
afterAll(() => s3.close());

const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + 7) % 256);

describe("S3Storage", () => {
  it("puts an object with its content type and returns its public URL", async () => {
    const storage = S3Storage(cfg);
    const key = `media/${run}/photo.jpg`;
    const data = bytes(256 * 1024);
    const url = await storage.put(key, data, "image/jpeg");
    expect(url).toBe(`${s3.endpoint}/media/media/${run}/photo.jpg`);
    expect(storage.urlFor(key)).toBe(url);

    const stored = s3.objects.get(`media/${key}`)!;
    expect(stored.contentType).toBe("image/jpeg");
    expect(stored.cacheControl).toMatch(/immutable/);
    expect(Buffer.compare(stored.bytes, Buffer.from(data))).toBe(0);

    const put = s3.requests.find((r) => r.method === "PUT" && r.path.endsWith("/photo.jpg"))!;
    expect(put.signed).toBe(true);
    expect(put.headers.authorization).toMatch(new RegExp(`Credential=${s3.credentials.accessKeyId}/\\d{8}/auto/s3/aws4_request`));
    expect(put.path).toBe(`/media/media/${run}/photo.jpg`); // path-style

    // The public URL serves the object (an anonymous read, as a platform fetching a post image would do).
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("image/jpeg");
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(data);
  });

  it("gets bytes and content type back, and null for a missing key", async () => {
    const storage = S3Storage(cfg);
    const key = `media/${run}/all-bytes.png`;
    const data = Uint8Array.from({ length: 256 }, (_, i) => i);
    await storage.put(key, data, "image/png");
    const got = await storage.get(key);
    expect(got?.contentType).toBe("image/png");
    expect(got?.bytes).toEqual(data);
    expect(await storage.get(`media/${run}/nope.png`)).toBeNull();
  });

  it("deletes, and deleting twice is fine", async () => {
    const storage = S3Storage(cfg);
    const key = `media/${run}/gone.webp`;
    await storage.put(key, bytes(10), "image/webp");
    await storage.delete(key);
    expect(await storage.get(key)).toBeNull();
    await expect(storage.delete(key)).resolves.toBeUndefined();
    expect(s3.objects.has(`media/${key}`)).toBe(false);
  });

  it("keeps unusual but valid keys intact and encodes them in URLs", async () => {
    const storage = S3Storage(cfg);
    const key = `media/${run}/a b+c&d=é%.jpg`;
    const url = await storage.put(key, bytes(3), "image/jpeg");
    expect(url).toBe(`${s3.endpoint}/media/media/${run}/a%20b%2Bc%26d%3D%C3%A9%25.jpg`);
    expect(s3.objects.has(`media/${key}`)).toBe(true);
    expect((await storage.get(key))?.bytes).toEqual(bytes(3));
    expect((await fetch(url)).status).toBe(200);
  });

  it("refuses keys that are not plain relative paths", async () => {
    const storage = S3Storage(cfg);
    for (const key of ["", "/abs.jpg", "../up.jpg", "a/../b.jpg", "a//b.jpg", "a/./b.jpg", "a\\b.jpg", "a\nb.jpg"]) {
      await expect(storage.put(key, bytes(1), "image/jpeg"), JSON.stringify(key)).rejects.toThrow(/invalid storage key/);
      expect(() => storage.urlFor(key)).toThrow(/invalid storage key/);
    }
  });

  it("is refused with a wrong secret, an unknown bucket or the wrong region (the fake checks signatures)", async () => {
    await expect(S3Storage({ ...cfg, secretAccessKey: "wrong" }).put(`media/${run}/x.jpg`, bytes(1), "image/jpeg")).rejects.toMatchObject({
      name: "SignatureDoesNotMatch",
    });
    await expect(S3Storage({ ...cfg, bucket: "other" }).put(`media/${run}/x.jpg`, bytes(1), "image/jpeg")).rejects.toMatchObject({ name: "NoSuchBucket" });
    await expect(S3Storage({ ...cfg, region: "eu-west-1" }).get(`media/${run}/x.jpg`)).rejects.toMatchObject({ name: "AuthorizationHeaderMalformed" });
    expect(s3.objects.has(`media/media/${run}/x.jpg`)).toBe(false);
  });

  it("throws, rather than answering 'not found', when the endpoint is down", async () => {
    const storage = S3Storage({ ...cfg, endpoint: `http://127.0.0.1:${await closedPort()}` }, { maxAttempts: 1 });
    await expect(storage.get(`media/${run}/photo.jpg`)).rejects.toThrow();
  });
});

describe("the S3 fake", () => {
  it("answers HeadObject with size and type, and 404 for a missing key", async () => {
    const storage = S3Storage(cfg);
    const key = `media/${run}/head.jpg`;
    await storage.put(key, bytes(1234), "image/jpeg");
    const client = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials: s3.credentials });
    const head = await client.send(new HeadObjectCommand({ Bucket: "media", Key: key }));
    expect(head.ContentLength).toBe(1234);
    expect(head.ContentType).toBe("image/jpeg");
    expect(head.ETag).toMatch(/^"[0-9a-f]{32}"$/);
    await expect(client.send(new HeadObjectCommand({ Bucket: "media", Key: `${key}.missing` }))).rejects.toMatchObject({
      $metadata: { httpStatusCode: 404 },
    });
    client.destroy();
  });

  it("refuses anonymous writes", async () => {
    const res = await fetch(`${s3.endpoint}/media/media/${run}/anon.jpg`, { method: "PUT", body: "x" });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("<Code>AccessDenied</Code>");
  });
});

describe("S3 storage in the Node services", () => {
  it("is picked when the S3_* variables are set, and /files serves from the bucket", async () => {
    const h = await createTestApp({
      env: {
        S3_ENDPOINT: s3.endpoint,
        S3_REGION: s3.region,
        S3_BUCKET: "media",
        S3_ACCESS_KEY_ID: s3.credentials.accessKeyId,
        S3_SECRET_ACCESS_KEY: s3.credentials.secretAccessKey,
        S3_PUBLIC_BASE_URL: `${s3.endpoint}/media`,
      },
    });
    try {
      const key = `media/${run}/node.jpg`;
      expect(await h.services.storage.put(key, bytes(50), "image/jpeg")).toBe(`${s3.endpoint}/media/${key}`);
      expect(s3.objects.has(`media/${key}`)).toBe(true);
      const res = await h.app.request(`/files/${key}`);
      expect(res.status).toBe(200);
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes(50));
    } finally {
      await h.close();
    }
  });

  it("a bucket that cuts an object short is our 500, logged (Node calls it 'aborted', as it does a client hanging up)", async () => {
    const cut = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "image/jpeg", "content-length": "100000" });
      res.write(Buffer.alloc(50_000), () => setTimeout(() => res.socket?.destroy(), 20));
    });
    await new Promise<void>((resolve) => cut.listen(0, "127.0.0.1", resolve));
    const endpoint = `http://127.0.0.1:${(cut.address() as AddressInfo).port}`;
    const logLines: string[] = [];
    const h = await createTestApp({
      logLines,
      env: {
        S3_ENDPOINT: endpoint,
        S3_REGION: "auto",
        S3_BUCKET: "media",
        S3_ACCESS_KEY_ID: "a",
        S3_SECRET_ACCESS_KEY: "s",
        S3_PUBLIC_BASE_URL: `${endpoint}/media`,
      },
    });
    try {
      const res = await h.app.request(`/files/media/${run}/cut.jpg`);
      expect(res.status).toBe(500);
      expect((await res.json()).error.code).toBe("INTERNAL");
      expect(logLines.some((l) => l.includes('"unhandled error"') && l.includes("aborted"))).toBe(true);
    } finally {
      await h.close();
      await new Promise((resolve) => cut.close(resolve));
    }
  });
});
