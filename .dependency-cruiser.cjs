/**
 * The import rules `npm run check` enforces (docs/architecture.md, "Layers"): no cycles, type-only imports
 * included, and layers that import only their own layer or lower ones. Lowest first:
 *
 *   lib       src/lib: pure helpers and the error type
 *   base      src/images, src/adapters, db, src/config.ts, src/services.ts (the ports), src/heavy/index.ts
 *             (the heavy-work limiter and its port)
 *   http      src/http
 *   areas     src/qr, src/photo, src/social, src/hub, src/webhooks: none imports another, except the edges allowed below
 *   app       src/app.ts, src/edge-services.ts, src/sandbox-app.ts, src/heavy/tasks.ts and src/heavy/wire.ts
 *             (the heavy-task registry names every area's tasks)
 *   entries   functions, dev: may import anything; so may test, bench and scripts, which are not checked
 *
 * dependency-cruiser runs from tools/layers, beside the TypeScript 6 compiler API it parses .ts/.tsx with
 * (the project compiles with TypeScript 7, which has none).
 */
const LIB = "^src/lib/";
const BASE = ["^src/(images|adapters)/", "^db/", "^src/(config|services)\\.ts$", "^src/heavy/index\\.ts$"];
const HTTP = "^src/http/";
const AREAS = "^src/(qr|photo|social|hub|webhooks)/";
const APP = ["^src/(app|edge-services|sandbox-app)\\.ts$", "^src/heavy/(tasks|wire)\\.ts$"];
const ENTRIES = ["^functions/", "^dev/"];

/** `#photon` (package.json "imports") is the platform's photon: functions/node/photon.ts on Node. */
const PHOTON_SEAM = "^functions/node/photon\\.ts$";

/** A rule forbidding `from` to import any of `to`. */
const above = (name, comment, from, to, pathNot) => ({
  name,
  comment,
  severity: "error",
  from: { path: from },
  to: { path: to, ...(pathNot ? { pathNot } : {}) },
});

/** An area importing another area's modules, except the allowed edges. */
const areaRule = (area, allowed) => ({
  name: `area-${area}-imports-another-area`,
  comment: `src/${area} imports another area; areas are independent (allowed: ${allowed.length ? allowed.join(", ") : "none"})`,
  severity: "error",
  from: { path: `^src/${area}/` },
  to: { path: "^src/(qr|photo|social|hub|webhooks)/", pathNot: [`^src/${area}/`, ...allowed] },
});

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "an import cycle (type-only imports count)",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    above("lib-imports-above", "src/lib imports only src/lib and packages", LIB, [...BASE, HTTP, AREAS, ...APP, ...ENTRIES]),
    above(
      "base-imports-above",
      "src/images, src/adapters, db, config.ts, services.ts and the heavy-work limiter import only src/lib and each other",
      BASE,
      [HTTP, AREAS, ...APP, ...ENTRIES],
      PHOTON_SEAM,
    ),
    above("http-imports-above", "src/http imports only lower layers", HTTP, [AREAS, ...APP, ...ENTRIES]),
    above("area-imports-above", "the areas import only src/http and lower layers", AREAS, [...APP, ...ENTRIES]),
    above("app-imports-entries", "the app layer does not import functions/ or dev/", APP, ENTRIES),
    {
      name: "codecs-behind-their-interface",
      comment:
        "outside src/images, decoding and encoding go through src/images/codecs (or src/images/index.ts), never a decoder or encoder module, so no caller knows which decoder runs",
      severity: "error",
      from: { pathNot: "^src/images/" },
      to: {
        path: "^src/images/(codec|scaled|jpeg-decode|jpeg-encode|png-decode|png-rows|png|webp-decode|vp8-decode|vp8l-decode|vp8-tables|entropy-split|planes|photon-none)\\.ts$",
      },
    },
    areaRule("qr", []),
    areaRule("photo", []),
    // The hub's pages show and cancel area C's posts and connect its accounts, through area C's functions.
    // The hub's Credits and Gallery pages read area B's account through area B's functions.
    areaRule("hub", ["^src/social/", "^src/webhooks/", "^src/photo/(account|credits|gallery|schemas)\\.ts$"]),
    // A webhook message carries area C's post or account and area B's job, read through those areas' functions.
    areaRule("webhooks", ["^src/social/(post-record|accounts|schemas)\\.ts$", "^src/photo/(service|schemas)\\.ts$"]),
    // The sandbox's OAuth dialog signs a person in with the hub's session and page environment; a post's
    // `{galleryId}` image is read through area B's gallery.
    areaRule("social", ["^src/hub/(session|env)\\.ts$", "^src/photo/gallery\\.ts$"]),
    {
      name: "not-to-unresolvable",
      comment: "an import that does not resolve (so no rule could see it)",
      severity: "error",
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "node_modules" },
    // Type-only imports are edges too: a type cycle still ties the modules together.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".d.ts", ".mts", ".js", ".mjs", ".cjs", ".json"],
    },
  },
};
