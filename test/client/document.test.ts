/**
 * The document as generators read it: a request field with a default is optional, and no generator can take
 * it for "always present". Generators that type a `default` in a shared component schema as required
 * (openapi-typescript's default) read request bodies written in place as input, so no request body may reach
 * a defaulted field through a `$ref` to a component.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestApp, type TestApp } from "../helpers/harness";

let h: TestApp;
let doc: any;
beforeAll(async () => {
  h = await createTestApp();
  doc = await (await h.app.request("/openapi.json")).json();
});
afterAll(async () => {
  await h?.close();
});

/** Each field with a default under `schema`: its path, and whether a `$ref` led there and whether it is in `required`. */
function defaultedFields(schema: unknown, where: string, viaRef = false, out: Array<{ where: string; viaRef: boolean; required: boolean }> = []) {
  if (!schema || typeof schema !== "object") return out;
  const s = schema as Record<string, any>;
  if (typeof s.$ref === "string") return defaultedFields(doc.components.schemas[s.$ref.split("/").pop()!], `${where}->${s.$ref}`, true, out);
  for (const [name, property] of Object.entries<any>(s.properties ?? {})) {
    if (property && typeof property === "object" && "default" in property)
      out.push({ where: `${where}.${name}`, viaRef, required: (s.required ?? []).includes(name) });
    defaultedFields(property, `${where}.${name}`, viaRef, out);
  }
  for (const key of ["oneOf", "anyOf", "allOf"])
    for (const [i, branch] of (s[key] ?? []).entries()) defaultedFields(branch, `${where}/${key}/${i}`, viaRef, out);
  if (s.items) defaultedFields(s.items, `${where}[]`, viaRef, out);
  return out;
}

describe("request bodies in the served document", () => {
  it("hold their defaulted fields in place, never required, and drop the components only they used", () => {
    const found = Object.entries<any>(doc.paths).flatMap(([path, item]) =>
      Object.entries<any>(item).flatMap(([method, op]) =>
        Object.entries<any>(op?.requestBody?.content ?? {}).flatMap(([, media]) => defaultedFields(media.schema, `${method} ${path}`)),
      ),
    );
    // The QR design fields are the defaulted ones today: size, fgColor, bgColor, logoSizeRatio, isTransparent.
    expect(found.filter((f) => f.where.startsWith("post /api/qr-code/generate") && f.where.endsWith(".size")).length).toBeGreaterThan(0);
    expect(found.filter((f) => f.viaRef)).toEqual([]);
    expect(found.filter((f) => f.required)).toEqual([]);
    expect(Object.keys(doc.components.schemas)).not.toContain("QrGenerateRequest");
    // Shared request components without defaults stay shared.
    expect(doc.paths["/api/v1/social/posts"].post.requestBody.content["application/json"].schema.$ref).toBe("#/components/schemas/PostCreate");
  });
});
