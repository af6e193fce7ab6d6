/**
 * API keys page: the user's keys (name, prefix, scopes, created, last used, state), a form that creates one
 * with the areas it may call and shows the full key once (on the POST's own answer, never stored, never shown
 * again), and revoke buttons.
 * A revoked key is refused by the API from the next request on (the API checks revocation on every call).
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { apiKeys } from "../../db/schema";
import { createApiKey, describeScopes, listApiKeys } from "../http/api-keys";
import { API_KEY_SCOPES, mayHavePages, normaliseScopes, parseOrigins, type ApiKeyScope } from "../lib/scopes";
import type { HubEnv, HubSession } from "./env";
import { readHubForm } from "./form";
import { formatTime, Layout, PostForm, Secret, StackTable } from "./ui/layout";

type Flash = { kind: "ok" | "error"; text: string } | null;

/** What each scope's checkbox says; one checkbox a scope, named `scope_<name>`, so the form repeats no field. */
const SCOPE_LABELS: Record<ApiKeyScope, string> = {
  qr: "QR codes (area A)",
  photo: "Product photography (area B, spends credits)",
  social: "Social publishing (area C, posts to your pages)",
};

async function keysPage(
  c: Context<HubEnv>,
  options: {
    created?: { key: string; name: string; scopes: ApiKeyScope[] | null; allowedOrigins: string[] | null };
    flash?: Flash;
    status?: 200 | 201 | 400 | 404;
  } = {},
) {
  const session = c.get("session") as HubSession;
  const keys = await listApiKeys(c.get("services").db, session.userId);
  return c.html(
    <Layout title="API keys" session={session} nav="keys" nonce={c.get("secureHeadersNonce")} flash={options.flash}>
      <h1>API keys</h1>
      <p class="muted">
        Send a key as <code>Authorization: Bearer &lt;key&gt;</code> from your server. Keep keys out of repositories, and out of browsers unless they are for QR
        codes only.
      </p>
      {options.created ? (
        <section class="card" aria-labelledby="new-key">
          <h2 id="new-key">Your new key “{options.created.name}”</h2>
          <p>
            Copy it now: this is the only time it is shown. It may call: <strong>{describeScopes(options.created.scopes)}</strong>
            {options.created.allowedOrigins ? (
              <>
                , from pages on <strong>{options.created.allowedOrigins.join(", ")}</strong>
              </>
            ) : null}
            .
          </p>
          <Secret id="new-key-value" value={options.created.key} label="Copy the new API key" />
        </section>
      ) : null}
      <section class="card" aria-labelledby="create">
        <h2 id="create">Create a key</h2>
        <PostForm action="/hub/keys" session={session} class="row">
          <div>
            <label for="key-name">Name</label>
            <input id="key-name" type="text" name="name" required maxlength={100} placeholder="e.g. production server" />
          </div>
          <fieldset class="scopes">
            <legend>Areas this key may call</legend>
            <label>
              <input type="radio" name="access" value="all" checked /> All areas
            </label>
            <label>
              <input type="radio" name="access" value="some" /> Only these:
            </label>
            {API_KEY_SCOPES.map((scope) => (
              <label class="indent">
                <input type="checkbox" name={`scope_${scope}`} value="on" /> {SCOPE_LABELS[scope]}
              </label>
            ))}
            <p class="muted">
              A key that goes into a public page (an <code>&lt;img&gt;</code> tag's QR code URL) can be read by anyone: make it for QR codes only.
            </p>
            <label for="key-origins">Pages it may be used from (QR codes only; optional)</label>
            <input id="key-origins" type="text" name="origins" maxlength={1000} placeholder="e.g. https://shop.example, https://www.shop.example" />
            <p class="muted">Requests whose Origin or Referer names another site, or none, are refused.</p>
          </fieldset>
          <button type="submit">Create key</button>
        </PostForm>
      </section>
      <h2>Your keys</h2>
      {keys.length === 0 ? (
        <p>No keys yet.</p>
      ) : (
        <StackTable columns={["Name", "Prefix", "Scopes", "Pages", "Created", "Last used", "State", <span class="muted">Action</span>]}>
          {[...keys].reverse().map((k) => (
            <tr>
              <td data-label="Name">{k.name}</td>
              <td data-label="Prefix">
                <code>{k.prefix}…</code>
              </td>
              <td data-label="Scopes">{describeScopes(k.scopes)}</td>
              <td data-label="Pages">{k.allowedOrigins ? k.allowedOrigins.join(", ") : "any"}</td>
              <td data-label="Created">{formatTime(k.createdAt)}</td>
              <td data-label="Last used">{k.lastUsedAt ? formatTime(k.lastUsedAt) : "never"}</td>
              <td data-label="State">{k.revokedAt ? <span class="badge revoked">revoked</span> : <span class="badge live">live</span>}</td>
              <td>
                {k.revokedAt ? null : (
                  <PostForm action={`/hub/keys/${k.prefix}/revoke`} session={session}>
                    <button type="submit" class="danger" aria-label={`Revoke key ${k.name} (${k.prefix})`}>
                      Revoke
                    </button>
                  </PostForm>
                )}
              </td>
            </tr>
          ))}
        </StackTable>
      )}
    </Layout>,
    options.status ?? 200,
  );
}

export function createKeyRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => keysPage(c));

  router.post("/", async (c) => {
    const body = await readHubForm(c);
    const name = typeof body.name === "string" ? body.name.trim() : "";
    if (name.length < 1 || name.length > 100) {
      return keysPage(c, { flash: { kind: "error", text: "Give the key a name of 1 to 100 characters." }, status: 400 });
    }
    // "All areas" unless the form says "only these" (a form without the field makes an all-areas key, as the CLI does).
    const chosen = body.access === "some" ? API_KEY_SCOPES.filter((scope) => body[`scope_${scope}`] === "on") : null;
    if (chosen && chosen.length === 0) {
      return keysPage(c, { flash: { kind: "error", text: "Choose at least one area the key may call, or All areas." }, status: 400 });
    }
    const scopes = normaliseScopes(chosen);
    const originsText = typeof body.origins === "string" ? body.origins.trim() : "";
    let allowedOrigins: string[] | null = null;
    if (originsText) {
      if (!mayHavePages(scopes)) {
        return keysPage(c, {
          flash: { kind: "error", text: "Pages can be set only for a key for QR codes alone: a key that can publish or buy belongs on a server." },
          status: 400,
        });
      }
      try {
        allowedOrigins = parseOrigins(originsText);
      } catch (err) {
        return keysPage(c, { flash: { kind: "error", text: `Pages: ${(err as Error).message}.` }, status: 400 });
      }
    }
    const created = await createApiKey(c.get("services").db, c.get("session")!.userId, name, { scopes, allowedOrigins });
    return keysPage(c, { created: { key: created.key, name, scopes: created.scopes, allowedOrigins: created.allowedOrigins }, status: 201 });
  });

  router.post("/:prefix/revoke", async (c) => {
    const prefix = c.req.param("prefix");
    const rows = await c
      .get("services")
      .db.update(apiKeys)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(apiKeys.prefix, prefix), eq(apiKeys.userId, c.get("session")!.userId), isNull(apiKeys.revokedAt)))
      .returning({ name: apiKeys.name });
    if (rows[0]) c.get("services").apiKeyCache?.clear();
    const flash: Flash = rows[0]
      ? { kind: "ok", text: `Key “${rows[0].name}” (${prefix}…) is revoked. The API refuses it from now on.` }
      : { kind: "error", text: "No live key of yours has that prefix." };
    return keysPage(c, { flash, status: rows[0] ? 200 : 404 });
  });
  return router;
}
