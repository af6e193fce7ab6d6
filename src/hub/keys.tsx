/**
 * API keys page: the user's keys (name, prefix, scopes, created, last used, state), a form that creates one
 * with the areas it may call, and revoking with a confirmation step. Every form answers 303 to the page
 * (src/hub/flash.ts): a new key travels to it sealed in the session and is shown once, on the first load
 * after the POST, never in a URL; a reload shows it no more and creates nothing.
 * A revoked key is refused by the API from the next request on (the API checks revocation on every call).
 */
import { and, eq, isNull, sql } from "drizzle-orm";
import { Hono, type Context } from "hono";
import { apiKeys } from "../../db/schema";
import { createApiKey, describeScopes, keyNameProblem, listApiKeys } from "../http/api-keys";
import { API_KEY_SCOPES, mayHavePages, normaliseScopes, parseOrigins, type ApiKeyScope } from "../lib/scopes";
import type { HubEnv, HubSession } from "./env";
import { HubError } from "./errors";
import { redirectWithFlash, takeFlash } from "./flash";
import { readHubForm } from "./form";
import { Confirm, formatTime, Layout, PostForm, Secret, StackTable } from "./ui/layout";

/** What each scope's checkbox says; one checkbox a scope, named `scope_<name>`, so the form repeats no field. */
const SCOPE_LABELS: Record<ApiKeyScope, string> = {
  qr: "QR codes (area A)",
  photo: "Product photography (area B, spends credits)",
  social: "Social publishing (area C, posts to your pages)",
};

async function keysPage(c: Context<HubEnv>) {
  const session = c.get("session") as HubSession;
  const flash = await takeFlash(c);
  const created = flash?.newKey;
  const keys = await listApiKeys(c.get("services").db, session.userId);
  return c.html(
    <Layout title="API keys" session={session} nav="keys" nonce={c.get("secureHeadersNonce")} flash={flash}>
      <h1>API keys</h1>
      <p class="muted">
        Send a key as <code>Authorization: Bearer &lt;key&gt;</code> from your server. Keep keys out of repositories, and out of browsers unless they are for QR
        codes only.
      </p>
      {created ? (
        <section class="card" aria-labelledby="new-key">
          <h2 id="new-key">Your new key “{created.name}”</h2>
          <p>
            Copy it now: this is the only time it is shown. It may call: <strong>{describeScopes(created.scopes)}</strong>
            {created.allowedOrigins ? (
              <>
                , from pages on <strong>{created.allowedOrigins.join(", ")}</strong>
              </>
            ) : null}
            .
          </p>
          <Secret id="new-key-value" value={created.key} label="Copy the new API key" />
          <p class="next small">
            Next: <a href="/hub/start">Getting started</a> shows a QR code, a product photo and a post made with it.
          </p>
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
                  <a class="button danger" href={`/hub/keys/${k.prefix}/revoke`} aria-label={`Revoke key ${k.name} (${k.prefix})`}>
                    Revoke
                  </a>
                )}
              </td>
            </tr>
          ))}
        </StackTable>
      )}
    </Layout>,
  );
}

/** The user's live key with this prefix, or a 404 page. */
async function liveKey(c: Context<HubEnv>, prefix: string) {
  const keys = await listApiKeys(c.get("services").db, c.get("session")!.userId);
  const key = keys.find((k) => k.prefix === prefix && !k.revokedAt);
  if (!key) throw new HubError(404, "No live key of yours has that prefix: it may be revoked already.");
  return key;
}

export function createKeyRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => keysPage(c));

  router.post("/", async (c) => {
    const body = await readHubForm(c);
    const refuse = (text: string) => redirectWithFlash(c, "/hub/keys", { kind: "error", text });
    const name = typeof body.name === "string" ? body.name.trim() : "";
    if (name.length < 1 || name.length > 100) return refuse("Give the key a name of 1 to 100 characters.");
    if (keyNameProblem(name)) return refuse("The key's name must not contain line breaks or other control characters.");
    // "All areas" unless the form says "only these" (a form without the field makes an all-areas key, as the CLI does).
    const chosen = body.access === "some" ? API_KEY_SCOPES.filter((scope) => body[`scope_${scope}`] === "on") : null;
    if (chosen && chosen.length === 0) return refuse("Choose at least one area the key may call, or All areas.");
    const scopes = normaliseScopes(chosen);
    const originsText = typeof body.origins === "string" ? body.origins.trim() : "";
    let allowedOrigins: string[] | null = null;
    if (originsText) {
      if (!mayHavePages(scopes)) return refuse("Pages can be set only for a key for QR codes alone: a key that can publish or buy belongs on a server.");
      try {
        allowedOrigins = parseOrigins(originsText);
      } catch (err) {
        return refuse(`Pages: ${(err as Error).message}.`);
      }
    }
    const created = await createApiKey(c.get("services").db, c.get("session")!.userId, name, { scopes, allowedOrigins });
    return redirectWithFlash(c, "/hub/keys", {
      kind: "ok",
      text: `Key “${name}” is created.`,
      newKey: { key: created.key, name, scopes: created.scopes, allowedOrigins: created.allowedOrigins },
    });
  });

  router.get("/:prefix/revoke", async (c) => {
    const session = c.get("session") as HubSession;
    const prefix = c.req.param("prefix");
    const key = await liveKey(c, prefix);
    return c.html(
      <Layout title="Revoke key" session={session} nav="keys">
        <Confirm
          session={session}
          question={`Revoke the key “${key.name}”?`}
          action={`/hub/keys/${prefix}/revoke`}
          button="Yes, revoke it"
          back="/hub/keys"
          backLabel="No, keep it"
        >
          <p>
            <code>{prefix}…</code> may call: {describeScopes(key.scopes)}.{" "}
            {key.lastUsedAt ? `It was last used ${formatTime(key.lastUsedAt)}.` : "It was never used."}
          </p>
          <p>Anything that still sends it (your server, a shop page showing QR codes) is refused from the next request on. This cannot be undone.</p>
        </Confirm>
      </Layout>,
    );
  });

  router.post("/:prefix/revoke", async (c) => {
    const prefix = c.req.param("prefix");
    // Without the confirmation page's field this is a first step: show the question.
    if ((await readHubForm(c)).confirm !== "yes") return c.redirect(`/hub/keys/${encodeURIComponent(prefix)}/revoke`, 303);
    const rows = await c
      .get("services")
      .db.update(apiKeys)
      .set({ revokedAt: sql`now()` })
      .where(and(eq(apiKeys.prefix, prefix), eq(apiKeys.userId, c.get("session")!.userId), isNull(apiKeys.revokedAt)))
      .returning({ name: apiKeys.name });
    if (rows[0]) c.get("services").apiKeyCache?.clear();
    return redirectWithFlash(
      c,
      "/hub/keys",
      rows[0]
        ? { kind: "ok", text: `Key “${rows[0].name}” (${prefix}…) is revoked. The API refuses it from now on.` }
        : { kind: "error", text: "No live key of yours has that prefix: it may be revoked already." },
    );
  });
  return router;
}
