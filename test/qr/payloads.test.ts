import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/http/errors";
import { buildPayload, escapeVcardText, escapeWifi, foldLine, mailtoPayload, upiPayload, utf8Length, vcardPayload, wifiPayload } from "../../src/qr/payloads";
import { parseGenerateRequest } from "../../src/qr/schemas";

/** The 422 a bad body gets: code and the field paths named in details. */
function rejects(body: unknown): { code: string; paths: string[]; message: string } {
  try {
    parseGenerateRequest(body);
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    const e = err as ApiError;
    expect(e.status).toBe(422);
    return { code: e.code, paths: (e.details ?? []).map((d) => d.path), message: e.message };
  }
  throw new Error(`accepted ${JSON.stringify(body)}`);
}

describe("payloads: url and text", () => {
  it("keeps an absolute http(s) URL as given", () => {
    expect(buildPayload(parseGenerateRequest({ type: "url", value: "https://example.com/a?b=1#c" }))).toBe("https://example.com/a?b=1#c");
    expect(buildPayload(parseGenerateRequest({ type: "url", value: "  http://example.com  " }))).toBe("http://example.com");
  });

  it.each(["example.com", "/relative", "ftp://example.com/x", "javascript:alert(1)", "https://", "https://exa mple.com", "mailto:a@b.c"])(
    "refuses %j as a url",
    (value) => {
      expect(rejects({ type: "url", value }).paths).toEqual(["value"]);
    },
  );

  it("keeps text byte for byte, newlines and unicode included", () => {
    const value = "line 1\nline 2 — ünïcödé 日本 🎉";
    expect(buildPayload(parseGenerateRequest({ type: "text", value }))).toBe(value);
  });
});

describe("payloads: wifi (ZXing WIFI: form)", () => {
  it("writes T, S, P in the documented order and ends with ;;", () => {
    expect(wifiPayload({ ssid: "Home", password: "secret12", encryption: "WPA" })).toBe("WIFI:T:WPA;S:Home;P:secret12;;");
    expect(wifiPayload({ ssid: "Old", password: "12345", encryption: "WEP" })).toBe("WIFI:T:WEP;S:Old;P:12345;;");
  });

  it('escapes \\ ; , : and " with a backslash, backslash first', () => {
    expect(escapeWifi('a\\b;c,d:e"f')).toBe('a\\\\b\\;c\\,d\\:e\\"f');
    expect(wifiPayload({ ssid: "Café;Guest", password: 'p:a,s"s\\', encryption: "WPA" })).toBe('WIFI:T:WPA;S:Café\\;Guest;P:p\\:a\\,s\\"s\\\\;;');
  });

  it("omits P for nopass (the password is still required, empty there) and adds H:true for hidden networks", () => {
    expect(buildPayload(parseGenerateRequest({ type: "wifi", ssid: "Open", password: "", encryption: "nopass" }))).toBe("WIFI:T:nopass;S:Open;;");
    const missing = rejects({ type: "wifi", ssid: "Open", encryption: "nopass" });
    expect(missing.paths).toEqual(["password"]);
    expect(missing.message).toBe('password: is required ("" for an open network, with encryption nopass)');
    expect(buildPayload(parseGenerateRequest({ type: "wifi", ssid: "Open", password: "ignored", encryption: "nopass" }))).toBe("WIFI:T:nopass;S:Open;;");
    expect(buildPayload(parseGenerateRequest({ type: "wifi", ssid: "Lab", password: "pw123456", encryption: "WPA", hidden: true }))).toBe(
      "WIFI:T:WPA;S:Lab;P:pw123456;H:true;;",
    );
  });

  it("accepts the encryption names case-insensitively and writes the canonical one", () => {
    expect(buildPayload(parseGenerateRequest({ type: "wifi", ssid: "x", password: "y", encryption: "wpa" }))).toBe("WIFI:T:WPA;S:x;P:y;;");
  });

  it("names each bad field", () => {
    expect(rejects({ type: "wifi", password: "x", encryption: "WPA" }).paths).toEqual(["ssid"]);
    expect(rejects({ type: "wifi", ssid: "x", encryption: "WPA" }).paths).toEqual(["password"]);
    expect(rejects({ type: "wifi", ssid: "x", password: "", encryption: "WPA" }).paths).toEqual(["password"]);
    expect(rejects({ type: "wifi", ssid: "x", password: "y" }).paths).toEqual(["encryption"]);
    expect(rejects({ type: "wifi", ssid: "x", password: "y", encryption: "WPA3" }).message).toMatch(/WPA, WEP, nopass/);
    expect(rejects({ type: "wifi", ssid: "x".repeat(33), password: "y", encryption: "WPA" }).paths).toEqual(["ssid"]);
    expect(rejects({ type: "wifi", ssid: "two\nlines", password: "y", encryption: "WPA" }).paths).toEqual(["ssid"]);
    expect(rejects({ type: "wifi", ssid: "x", password: "y", encryption: "WPA", hidden: "yes" }).paths).toEqual(["hidden"]);
  });
});

describe("payloads: email (RFC 6068 mailto:)", () => {
  it("percent-encodes subject and body as UTF-8, spaces as %20, line breaks as %0D%0A", () => {
    expect(mailtoPayload({ to: "jane@example.com", subject: "Hello World", body: "Line 1\nLine 2\r\nLine 3" })).toBe(
      "mailto:jane@example.com?subject=Hello%20World&body=Line%201%0D%0ALine%202%0D%0ALine%203",
    );
    expect(mailtoPayload({ to: "jane@example.com", subject: "Grüße €" })).toBe("mailto:jane@example.com?subject=Gr%C3%BC%C3%9Fe%20%E2%82%AC");
  });

  it("encodes ? & = # % + inside values and keeps + readable in the address", () => {
    expect(mailtoPayload({ to: "bill+ietf@example.org", subject: "a+b=c & d?#50%" })).toBe(
      "mailto:bill+ietf@example.org?subject=a%2Bb%3Dc%20%26%20d%3F%2350%25",
    );
  });

  it("leaves out empty fields", () => {
    expect(buildPayload(parseGenerateRequest({ type: "email", to: "a@example.com" }))).toBe("mailto:a@example.com");
    expect(buildPayload(parseGenerateRequest({ type: "email", to: "a@example.com", body: "hi" }))).toBe("mailto:a@example.com?body=hi");
  });

  it("names each bad field", () => {
    expect(rejects({ type: "email" }).paths).toEqual(["to"]);
    expect(rejects({ type: "email", to: "not-an-address" }).paths).toEqual(["to"]);
    expect(rejects({ type: "email", to: "a@b.com, c@d.com" }).paths).toEqual(["to"]);
    expect(rejects({ type: "email", to: "a@example.com", subject: 5 }).paths).toEqual(["subject"]);
    expect(rejects({ type: "email", to: "a@example.com", body: ["x"] }).paths).toEqual(["body"]);
  });
});

describe("payloads: vcard (vCard 3.0, RFC 2426)", () => {
  const full = {
    firstName: "Jane",
    lastName: "Doe",
    organization: "Example Corp",
    phoneWork: "+1 555 0100",
    email: "jane@example.com",
    website: "https://example.com",
  };

  it("writes BEGIN, VERSION:3.0, N, FN, ORG, TEL;TYPE=WORK, EMAIL, URL, END with CRLF", () => {
    expect(vcardPayload(full)).toBe(
      [
        "BEGIN:VCARD",
        "VERSION:3.0",
        "N:Doe;Jane;;;",
        "FN:Jane Doe",
        "ORG:Example Corp",
        "TEL;TYPE=WORK:+1 555 0100",
        "EMAIL;TYPE=INTERNET:jane@example.com",
        "URL:https://example.com",
        "END:VCARD",
        "",
      ].join("\r\n"),
    );
    expect(vcardPayload({ firstName: "A", lastName: "B" })).toBe("BEGIN:VCARD\r\nVERSION:3.0\r\nN:B;A;;;\r\nFN:A B\r\nEND:VCARD\r\n");
  });

  it("escapes backslash, comma, semicolon and newlines in TEXT values", () => {
    expect(escapeVcardText("a\\b,c;d\ne\r\nf")).toBe("a\\\\b\\,c\\;d\\ne\\nf");
    const card = vcardPayload({ firstName: "Ann;Marie", lastName: "O,Neil\\", organization: "R&D; Labs\nEurope" });
    expect(card).toContain("N:O\\,Neil\\\\;Ann\\;Marie;;;\r\n");
    expect(card).toContain("FN:Ann\\;Marie O\\,Neil\\\\\r\n");
    expect(card).toContain("ORG:R&D\\; Labs\\nEurope\r\n");
  });

  it("folds lines longer than 75 octets with CRLF + space, never inside a UTF-8 character", () => {
    const long = `ORG:${"Ä".repeat(60)}`; // 4 + 120 octets
    const folded = foldLine(long);
    const lines = folded.split("\r\n");
    expect(lines.length).toBeGreaterThan(1);
    for (const [i, line] of lines.entries()) {
      expect(utf8Length(line)).toBeLessThanOrEqual(75);
      if (i > 0) expect(line.startsWith(" ")).toBe(true);
    }
    expect(lines.map((l, i) => (i ? l.slice(1) : l)).join("")).toBe(long);
    expect(foldLine("x".repeat(75))).toBe("x".repeat(75));
    expect(foldLine("x".repeat(76))).toBe(`${"x".repeat(75)}\r\n x`);
    const card = vcardPayload({
      firstName: "Jane",
      lastName: "Doe",
      organization: "The Extraordinarily Long Organisation Name of Example Corporation International",
    });
    for (const line of card.split("\r\n")) expect(utf8Length(line)).toBeLessThanOrEqual(75);
  });

  it("names each bad field", () => {
    expect(rejects({ type: "vcard", lastName: "Doe" }).paths).toEqual(["firstName"]);
    expect(rejects({ type: "vcard", firstName: "Jane" }).paths).toEqual(["lastName"]);
    expect(rejects({ type: "vcard", firstName: "", lastName: "Doe" }).paths).toEqual(["firstName"]);
    expect(rejects({ type: "vcard", firstName: "J", lastName: "D", phoneWork: "call me" }).paths).toEqual(["phoneWork"]);
    // Digits only, but too few: the message says how many a number needs.
    expect(rejects({ type: "vcard", firstName: "J", lastName: "D", phoneWork: "12" }).message).toMatch(/at least 3 digits/);
    expect(rejects({ type: "vcard", firstName: "J", lastName: "D", email: "nope" }).paths).toEqual(["email"]);
    expect(rejects({ type: "vcard", firstName: "J", lastName: "D", website: "example.com" }).paths).toEqual(["website"]);
    expect(rejects({ type: "vcard", firstName: "J", lastName: "D", organization: 3 }).paths).toEqual(["organization"]);
  });
});

describe("payloads: upi (NPCI upi://pay)", () => {
  it("writes pa, pn, am (two decimals), tn, cu=INR, percent-encoded", () => {
    expect(upiPayload({ upiId: "shop@okbank", payeeName: "My Shop", amount: 99.5, note: "Order #12 & more" })).toBe(
      "upi://pay?pa=shop@okbank&pn=My%20Shop&am=99.50&tn=Order%20%2312%20%26%20more&cu=INR",
    );
    expect(upiPayload({ upiId: "a.b-c_d@ybl", payeeName: "Ravi+Sons" })).toBe("upi://pay?pa=a.b-c_d@ybl&pn=Ravi%2BSons&cu=INR");
    expect(upiPayload({ upiId: "x1@upi", payeeName: "Café", amount: 1000 })).toBe("upi://pay?pa=x1@upi&pn=Caf%C3%A9&am=1000.00&cu=INR");
    expect(upiPayload({ upiId: "x1@upi", payeeName: "P", amount: 0.1 })).toContain("am=0.10");
  });

  it("names each bad field", () => {
    expect(rejects({ type: "upi", payeeName: "Shop" }).paths).toEqual(["upiId"]);
    expect(rejects({ type: "upi", upiId: "no-at-sign", payeeName: "Shop" }).paths).toEqual(["upiId"]);
    expect(rejects({ type: "upi", upiId: "a@1bank", payeeName: "Shop" }).paths).toEqual(["upiId"]);
    expect(rejects({ type: "upi", upiId: "shop@okbank" }).paths).toEqual(["payeeName"]);
    expect(rejects({ type: "upi", upiId: "shop@okbank", payeeName: "Shop", amount: 0 }).paths).toEqual(["amount"]);
    expect(rejects({ type: "upi", upiId: "shop@okbank", payeeName: "Shop", amount: -5 }).paths).toEqual(["amount"]);
    expect(rejects({ type: "upi", upiId: "shop@okbank", payeeName: "Shop", amount: 10.005 }).paths).toEqual(["amount"]);
    for (const tiny of [1e-9, 1e-300, 5e-324]) {
      const refused = rejects({ type: "upi", upiId: "shop@okbank", payeeName: "Shop", amount: tiny });
      expect(refused.paths, String(tiny)).toEqual(["amount"]);
      expect(refused.message, String(tiny)).toMatch(/at least 0\.01/);
    }
    expect(upiPayload({ upiId: "shop@okbank", payeeName: "Shop", amount: 0.01 })).toContain("am=0.01");
    expect(rejects({ type: "upi", upiId: "shop@okbank", payeeName: "Shop", amount: 2_000_000 }).paths).toEqual(["amount"]);
    expect(rejects({ type: "upi", upiId: "shop@okbank", payeeName: "Shop", amount: "10" }).paths).toEqual(["amount"]);
    expect(rejects({ type: "upi", upiId: "shop@okbank", payeeName: "Shop", note: "x".repeat(81) }).paths).toEqual(["note"]);
  });
});

describe("request validation", () => {
  it("lists the allowed types for a missing or unknown type", () => {
    for (const body of [{}, { type: "sms" }, { type: 5 }]) {
      const r = rejects(body);
      expect(r.code).toBe("VALIDATION_FAILED");
      expect(r.paths).toEqual(["type"]);
      expect(r.message).toContain("url, text, wifi, email, vcard, upi");
    }
    expect(rejects([]).paths).toEqual(["(body)"]);
  });

  it("fills the design defaults", () => {
    const r = parseGenerateRequest({ type: "text", value: "x" });
    expect(r).toMatchObject({ size: 512, fgColor: "#000000", bgColor: "#FFFFFF", logoSizeRatio: 0.2, isTransparent: false });
  });

  it.each([
    [{ size: 63 }, "size"],
    [{ size: 4097 }, "size"],
    [{ size: 300.5 }, "size"],
    [{ size: "512" }, "size"],
    [{ fgColor: "red" }, "fgColor"],
    [{ fgColor: "#12345" }, "fgColor"],
    [{ bgColor: "#GGGGGG" }, "bgColor"],
    [{ bgColor: "fff" }, "bgColor"],
    [{ logoSizeRatio: 0.09 }, "logoSizeRatio"],
    [{ logoSizeRatio: 0.41 }, "logoSizeRatio"],
    [{ logoUrl: "http://example.com/logo.png" }, "logoUrl"],
    [{ logoUrl: "not a url" }, "logoUrl"],
    [{ isTransparent: "true" }, "isTransparent"],
  ])("refuses design %j naming %s", (design, path) => {
    expect(rejects({ type: "text", value: "x", ...design }).paths).toEqual([path]);
  });

  it("accepts #RGB and #RRGGBB in any case", () => {
    expect(parseGenerateRequest({ type: "text", value: "x", fgColor: "#1a2", bgColor: "#FfEeDd" })).toMatchObject({ fgColor: "#1a2", bgColor: "#FfEeDd" });
    // Without its # (as the GET query allows), the body is told exactly what to send.
    expect(rejects({ type: "text", value: "x", fgColor: "1A73E8" }).message).toBe("fgColor: must start with # in a JSON body: #1A73E8");
  });
});
