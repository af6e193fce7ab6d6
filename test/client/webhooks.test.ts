/**
 * The client's `verifyWebhook` (WebCrypto) against the `standardwebhooks` package, the Standard Webhooks
 * reference: what the package signs, the client accepts, and both agree on what to refuse (a changed body,
 * id or timestamp, another secret, a message outside the five-minute tolerance).
 */
import fc from "fast-check";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { verifyWebhook, WebhookVerificationError } from "../../packages/client/src/index";

const secretOf = (bytes: Uint8Array) => `whsec_${Buffer.from(bytes).toString("base64")}`;
const SECRET = secretOf(crypto.getRandomValues(new Uint8Array(32)));
const OTHER = secretOf(crypto.getRandomValues(new Uint8Array(32)));

function signed(secret: string, body: string, id = "msg_2Lk3Yq9", at = new Date()) {
  return { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(secret).sign(id, at, body) };
}

const BODY = JSON.stringify({ type: "post.published", timestamp: "2026-12-06T05:00:00.000Z", data: { id: "post_1", status: "published" } });

describe("verifyWebhook", () => {
  it("accepts what standardwebhooks signs and returns the event", async () => {
    const headers = signed(SECRET, BODY);
    expect(new Webhook(SECRET).verify(BODY, headers)).toEqual(JSON.parse(BODY));
    const event = await verifyWebhook(BODY, headers, SECRET);
    expect(event).toEqual(JSON.parse(BODY));
    expect(event.type).toBe("post.published");
  });

  it("takes the body as bytes and the headers as Headers or a Node-style record in any case", async () => {
    const headers = signed(SECRET, BODY);
    const bytes = new TextEncoder().encode(BODY);
    await expect(verifyWebhook(bytes, new Headers(headers), SECRET)).resolves.toMatchObject({ type: "post.published" });
    await expect(verifyWebhook(bytes.buffer, headers, SECRET)).resolves.toMatchObject({ type: "post.published" });
    const shouted = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    await expect(verifyWebhook(BODY, shouted, SECRET)).resolves.toMatchObject({ type: "post.published" });
  });

  it("accepts a message signed by two secrets (a rotation) with either of them", async () => {
    const at = new Date();
    const one = signed(OTHER, BODY, "msg_rot", at);
    const two = signed(SECRET, BODY, "msg_rot", at);
    const headers = { ...one, "webhook-signature": `${one["webhook-signature"]} ${two["webhook-signature"]}` };
    await expect(verifyWebhook(BODY, headers, SECRET)).resolves.toMatchObject({ type: "post.published" });
    await expect(verifyWebhook(BODY, headers, OTHER)).resolves.toMatchObject({ type: "post.published" });
    // The reference package reads the header the same way.
    expect(() => new Webhook(SECRET).verify(BODY, headers)).not.toThrow();
  });

  it("refuses another secret, a changed body, a missing header, a non-v1 signature, and a body that is no event", async () => {
    const headers = signed(SECRET, BODY);
    await expect(verifyWebhook(BODY, headers, OTHER)).rejects.toThrow(WebhookVerificationError);
    await expect(verifyWebhook(`${BODY} `, headers, SECRET)).rejects.toThrow("no matching signature");
    await expect(verifyWebhook(BODY, { ...headers, "webhook-signature": "" }, SECRET)).rejects.toThrow("missing");
    const v2 = headers["webhook-signature"].replace(/^v1,/, "v2,");
    await expect(verifyWebhook(BODY, { ...headers, "webhook-signature": v2 }, SECRET)).rejects.toThrow("no matching signature");
    const notJson = signed(SECRET, "[1,2]");
    await expect(verifyWebhook("[1,2]", notJson, SECRET)).rejects.toThrow("not an event");
    await expect(verifyWebhook(BODY, headers, "whsec_%%%")).rejects.toThrow("Base64");
  });

  it("refuses a message more than five minutes old or ahead, as standardwebhooks does", async () => {
    const now = Date.now();
    for (const [offsetSeconds, ok] of [
      [-310, false],
      [-290, true],
      [290, true],
      [310, false],
    ] as const) {
      const headers = signed(SECRET, BODY, "msg_time", new Date(now + offsetSeconds * 1000));
      const ours = verifyWebhook(BODY, headers, SECRET, { now });
      // Ours at the edge itself, against the fixed clock.
      if (Math.abs(offsetSeconds) === 310) {
        const edge = signed(SECRET, BODY, "msg_edge", new Date(now + Math.sign(offsetSeconds) * 301_000));
        await expect(verifyWebhook(BODY, edge, SECRET, { now }), `${Math.sign(offsetSeconds) * 301} s`).rejects.toThrow(/too (old|new)/);
      }
      if (ok) await expect(ours, `${offsetSeconds} s`).resolves.toMatchObject({ type: "post.published" });
      else await expect(ours, `${offsetSeconds} s`).rejects.toThrow(/too (old|new)/);
      // The reference, at the real clock: the offsets are 10 s from the edge, so a second passing between the
      // signing and this check changes nothing.
      let reference = true;
      try {
        new Webhook(SECRET).verify(BODY, headers);
      } catch {
        reference = false;
      }
      expect(reference, `standardwebhooks at ${offsetSeconds} s`).toBe(ok);
    }
  });

  it("agrees with standardwebhooks on random messages, untouched and with one part changed", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 24, maxLength: 64 }),
        fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/[\s,.]/.test(s)),
        fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(fc.string(), fc.integer(), fc.boolean())),
        fc.constantFrom("none", "body", "id", "timestamp", "secret"),
        async (key, id, data, change) => {
          const secret = secretOf(key);
          const body = JSON.stringify({ type: "webhook.test", timestamp: new Date().toISOString(), data });
          const headers = signed(secret, body, id);
          const sent = {
            body: change === "body" ? `${body}\n` : body,
            headers: {
              ...headers,
              ...(change === "id" ? { "webhook-id": `${id}x` } : {}),
              ...(change === "timestamp" ? { "webhook-timestamp": String(Number(headers["webhook-timestamp"]) - 1) } : {}),
            },
            secret: change === "secret" ? OTHER : secret,
          };
          let reference = true;
          try {
            new Webhook(sent.secret).verify(sent.body, sent.headers);
          } catch {
            reference = false;
          }
          const ours = await verifyWebhook(sent.body, sent.headers, sent.secret).then(
            () => true,
            () => false,
          );
          expect(ours).toBe(reference);
          expect(ours).toBe(change === "none");
        },
      ),
      { numRuns: 200 },
    );
  });
});
