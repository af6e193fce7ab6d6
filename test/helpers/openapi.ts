/**
 * JSON Schema validation against the API's OpenAPI 3.1 document, whose schemas are JSON Schema 2020-12:
 * ajv's 2020 draft with ajv-formats, strict (an unknown keyword or format in the document is an error, not
 * silently ignored), the document added whole so `#/components/schemas/...` references resolve.
 *
 * @example
 * const schemas = documentSchemas(doc);
 * schemas.errors(["paths", "/api/qr-code/decode", "post", "requestBody", "content", "application/json", "schema"], { url: "https://..." }); // [] when valid
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

// ajv-formats is CommonJS; its default export arrives wrapped under some loaders.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as typeof addFormatsModule;

const DOCUMENT_ID = "urn:shopkit:openapi";

export interface DocumentSchemas {
  /** Ajv's errors for `value` against the schema at `pointer` (path segments), worded one per line; [] when valid. */
  errors(pointer: ReadonlyArray<string>, value: unknown): string[];
}

/** JSON pointer of path segments, escaped (`/` -> `~1`, `~` -> `~0`). */
export function jsonPointer(segments: ReadonlyArray<string>): string {
  return `/${segments.map((s) => s.replace(/~/g, "~0").replace(/\//g, "~1")).join("/")}`;
}

export function documentSchemas(doc: unknown): DocumentSchemas {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv);
  // OpenAPI's own keywords inside schemas, and the formats it names that JSON Schema leaves open.
  ajv.addVocabulary(["example", "discriminator", "xml", "externalDocs"]);
  // The document's own top-level fields, seen when a reference into it is resolved.
  ajv.addVocabulary(["openapi", "info", "servers", "tags", "paths", "components", "security", "webhooks", "jsonSchemaDialect"]);
  ajv.addFormat("password", true);
  ajv.addSchema(doc as object, DOCUMENT_ID);
  const compiled = new Map<string, ValidateFunction>();
  return {
    errors(pointer, value) {
      const ref = `${DOCUMENT_ID}#${encodeURI(jsonPointer(pointer))}`;
      let validate = compiled.get(ref);
      if (!validate) compiled.set(ref, (validate = ajv.compile({ $ref: ref })));
      return validate(value) ? [] : (validate.errors ?? []).map(describe);
    },
  };
}

function describe(e: ErrorObject): string {
  return `${e.instancePath || "(root)"} ${e.message ?? e.keyword}${e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : ""}`;
}
