/**
 * Two rules of the closed input (src/http/validate.ts, worded by src/http/issues.ts), through HTTP in every area:
 * - text is Unicode: a string anywhere in a body, query or path that holds a lone UTF-16 surrogate (JSON's
 *   "\ud800") is 422 VALIDATION_FAILED naming its field, whether or not its schema checks it itself, while
 *   a proper surrogate pair (an emoji) is text like any other;
 * - a number field given what is not a number (`1e999`, which JSON parses to Infinity, `-1e999`, `"12px"`,
 *   or `NaN` and the like in a query) is 422 with words a person reads: the field's name and what it takes,
 *   never zod's "expected number, received Infinity" or "not a Infinity".
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSocialTestApp, type SocialTestApp } from "../helpers/social";
import { productDataUrl } from "../photo/fixtures";

const ILL_FORMED = "must be valid Unicode text (a lone surrogate such as \\ud800 is not)";

let h: SocialTestApp;
let apiKey: string;
let page: string;
let product: string;

beforeAll(async () => {
  h = await createSocialTestApp({ env: { RATE_LIMIT_QR: "100000", RATE_LIMIT_PHOTO: "100000" } });
  const user = await h.createUser();
  apiKey = user.apiKey;
  page = await h.seedAccount(user.userId, "pageplatform");
  product = await productDataUrl();
}, 60_000);
afterAll(() => h?.close());

type ErrorBody = { error: { code: string; message: string; details?: Array<{ path: string; message: string }> } };

/** POSTs `body` as it is written (raw JSON text, so `1e999` and "\ud800" escapes reach the server as sent). */
function post(path: string, body: string, headers: Record<string, string> = {}) {
  return h.app.request(path, { method: "POST", headers: h.json(apiKey, headers), body });
}
const qr = (body: string) => post("/api/qr-code/generate", body);
const photo = (body: string) => post("/api/image/product-photography", body);
const socialPost = (body: string) => post("/api/v1/social/posts", body, { "Idempotency-Key": crypto.randomUUID() });
const get = (path: string) => h.app.request(path, { headers: h.auth(apiKey) });

/** The 422's one detail: its path is `field`, and the message starts with the field's name. */
async function refusal(res: Response, field: string): Promise<string> {
  const body = (await res.json()) as ErrorBody;
  expect(res.status, JSON.stringify(body)).toBe(422);
  expect(body.error.code).toBe("VALIDATION_FAILED");
  expect(
    body.error.details?.map((d) => d.path),
    body.error.message,
  ).toEqual([field]);
  expect(body.error.message.startsWith(`${field}: `), body.error.message).toBe(true);
  return body.error.details![0]!.message;
}

describe("a lone surrogate is refused in every text field, naming it", () => {
  const productJson = () => JSON.stringify(product);
  const cases: Array<[string, () => Response | Promise<Response>, string]> = [
    ["area A text", () => qr('{"type":"text","value":"a\\ud800b"}'), "value"],
    ["area A url", () => qr('{"type":"url","value":"https://example.com/\\udc00"}'), "value"],
    ["area A wifi ssid", () => qr('{"type":"wifi","ssid":"Cafe\\ud800","password":"secret123","encryption":"WPA"}'), "ssid"],
    ["area A e-mail subject", () => qr('{"type":"email","to":"a@example.com","subject":"Hi \\udbff"}'), "subject"],
    ["area A vCard name", () => qr('{"type":"vcard","firstName":"\\ud800","lastName":"Doe"}'), "firstName"],
    ["area A QR reading url", () => post("/api/qr-code/decode", '{"url":"https://example.com/\\ud800.png"}'), "url"],
    ["area B scene prompt", () => photo(`{"productImages":[{"dataUrl":${productJson()}}],"scenePrompt":"on a table \\ud800"}`), "scenePrompt"],
    ["area B template id", () => photo(`{"productImages":[{"dataUrl":${productJson()}}],"promptId":"studio\\ud800"}`), "promptId"],
    [
      "area B product label",
      () => photo(`{"productImages":[{"dataUrl":${productJson()},"label":"\\udfff"}],"promptId":"studio-white-sweep"}`),
      "productImages.0.label",
    ],
    ["area C caption", () => socialPost(`{"accountIds":"${page}","caption":"Sale \\ud800 today"}`), "caption"],
    ["area C account id", () => socialPost(`{"accountIds":["${page}","x\\ud800"],"caption":"hi"}`), "accountIds.1"],
    ["area C media id", () => socialPost(`{"accountIds":"${page}","caption":"hi","images":[{"mediaId":"\\ud800"}]}`), "images.0.mediaId"],
    ["area C media url", () => post("/api/v1/social/media", '{"url":"https://cdn.example.com/\\ud800.jpg"}'), "url"],
  ];
  for (const [name, send, field] of cases) {
    it(`${name}: 422 naming ${field}`, async () => {
      expect(await refusal(await send(), field)).toBe(ILL_FORMED);
    });
  }

  it("the QR GET path text: a lone surrogate's escapes are not UTF-8, 422 naming text", async () => {
    const message = await refusal(await get(`/api/qr-code/generate-base64/${apiKey}/a%ED%A0%80b`), "text");
    expect(message).toMatch(/not valid percent-encoded UTF-8/);
  });

  it("an emoji (a surrogate pair) is text: QR code, scene prompt and caption are accepted", async () => {
    const code = await qr('{"type":"text","value":"a\\ud83d\\ude00b"}');
    expect(code.status, await code.clone().text()).toBe(200);
    const get200 = await get(`/api/qr-code/generate-base64/${apiKey}/${encodeURIComponent("a😀b")}`);
    expect(get200.status).toBe(200);
    const created = await socialPost(`{"accountIds":"${page}","caption":"Sale \\ud83d\\ude00 today"}`);
    expect(created.status, (await created.clone().text()).slice(0, 300)).toBe(202);
    expect(((await created.json()) as { data: { caption: string } }).data.caption).toBe("Sale 😀 today");
    const scene = await photo(
      `{"productImages":[{"dataUrl":${productJson()}}],"scenePrompt":"on a table \\ud83d\\ude00","model":"standard","resolution":"1K"}`,
    );
    expect(scene.status, (await scene.clone().text()).slice(0, 300)).toBe(200);
  }, 60_000);
});

describe("number fields say what they take, in words", () => {
  /** What no message may say: zod's words, or a type name with the wrong article. */
  const UNREADABLE = /a Infinity|not a NaN|Infinity|NaN|Invalid input|received|expected/;

  const cases: Array<[string, () => Response | Promise<Response>, string, string]> = [
    ["A: size 1e999", () => qr('{"type":"text","value":"a","size":1e999}'), "size", "must be a whole number of pixels from 64 to 4096"],
    ["A: size -1e999", () => qr('{"type":"text","value":"a","size":-1e999}'), "size", "must be a whole number of pixels from 64 to 4096"],
    ['A: size "12px"', () => qr('{"type":"text","value":"a","size":"12px"}'), "size", "must be a whole number of pixels from 64 to 4096"],
    ["A: logoSizeRatio 1e999", () => qr('{"type":"text","value":"a","logoSizeRatio":1e999}'), "logoSizeRatio", "must be a number from 0.1 to 0.4"],
    ['A: logoSizeRatio "12px"', () => qr('{"type":"text","value":"a","logoSizeRatio":"12px"}'), "logoSizeRatio", "must be a number from 0.1 to 0.4"],
    ["A: UPI amount 1e999", () => qr('{"type":"upi","upiId":"shop@okbank","payeeName":"Shop","amount":1e999}'), "amount", "must be a finite number"],
    ["A: UPI amount -1e999", () => qr('{"type":"upi","upiId":"shop@okbank","payeeName":"Shop","amount":-1e999}'), "amount", "must be a finite number"],
    ["A: a text given 1e999", () => qr('{"type":"text","value":1e999}'), "value", "must be a string"],
    ["A: query size=NaN", () => get(`/api/qr-code/generate-base64/${apiKey}/hello?size=NaN`), "size", "must be a whole number of pixels from 64 to 4096"],
    ["A: query size=1e999", () => get(`/api/qr-code/generate-base64/${apiKey}/hello?size=1e999`), "size", "must be a whole number of pixels from 64 to 4096"],
    ["A: query size=-1e999", () => get(`/api/qr-code/generate-base64/${apiKey}/hello?size=-1e999`), "size", "must be a whole number of pixels from 64 to 4096"],
    ["A: query size=12px", () => get(`/api/qr-code/generate-base64/${apiKey}/hello?size=12px`), "size", "must be a whole number of pixels from 64 to 4096"],
    [
      "B: logoSize 1e999",
      () => photo('{"productImages":[{"url":"https://example.com/a.png"}],"promptId":"studio-white-sweep","logoSize":1e999}'),
      "logoSize",
      "must be a number from 0.1 to 0.8",
    ],
    [
      "B: logoSize -1e999",
      () => photo('{"productImages":[{"url":"https://example.com/a.png"}],"promptId":"studio-white-sweep","logoSize":-1e999}'),
      "logoSize",
      "must be a number from 0.1 to 0.8",
    ],
    [
      'B: logoSize "12px"',
      () => photo('{"productImages":[{"url":"https://example.com/a.png"}],"promptId":"studio-white-sweep","logoSize":"12px"}'),
      "logoSize",
      "must be a number from 0.1 to 0.8",
    ],
    ["B: productImages 1e999", () => photo('{"productImages":1e999,"promptId":"studio-white-sweep"}'), "productImages", "must be an array, not a number"],
    ["C: caption 1e999", () => socialPost(`{"accountIds":"${page}","caption":1e999}`), "caption", "must be a string, not a number"],
    ["C: caption -1e999", () => socialPost(`{"accountIds":"${page}","caption":-1e999}`), "caption", "must be a string, not a number"],
    ["C: hashtags 1e999", () => socialPost(`{"accountIds":"${page}","caption":"hi","hashtags":1e999}`), "hashtags", "must be an array, not a number"],
    ["C: query limit=NaN", () => get("/api/v1/social/posts?limit=NaN"), "limit", "must be a whole number from 1 to 100"],
    ["C: query limit=1e999", () => get("/api/v1/social/posts?limit=1e999"), "limit", "must be a whole number from 1 to 100"],
    ["C: query offset=-1e999", () => get("/api/v1/social/posts?offset=-1e999"), "offset", "must be a whole number from 0 to 10000"],
    ["C: query limit=12px", () => get("/api/v1/social/posts?limit=12px"), "limit", "must be a whole number from 1 to 100"],
  ];
  for (const [name, send, field, expected] of cases) {
    it(`${name}: 422 naming ${field}, readable`, async () => {
      const message = await refusal(await send(), field);
      expect(message).not.toMatch(UNREADABLE);
      expect(message).toBe(expected);
    });
  }

  it("a whole body of 1e999 is an object expected, not a number", async () => {
    expect(await refusal(await photo("1e999"), "(body)")).toBe("must be an object, not a number");
  });
});
