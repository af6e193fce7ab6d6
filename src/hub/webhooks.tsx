/**
 * Webhooks page: the user's endpoints and a form that adds one (its signing secret shown once, with a copy
 * button, on the page the form leads to, carried there sealed in the session as a new API key is), and each
 * endpoint's page: send a test, the delivery log with the receiver's answers, replay a message, rotate the
 * secret, disable or enable, delete (with a confirmation step). Every action is the API's own function
 * (src/webhooks/endpoints.ts), so its rules and refusals are the API's; a refusal is shown on the page.
 */
import { Hono, type Context } from "hono";
import { ApiError } from "../http/errors";
import { EVENT_DESCRIPTIONS, WEBHOOK_EVENT_TYPES, type WebhookEventType } from "../webhooks/events";
import * as endpoints from "../webhooks/endpoints";
import type { HubEnv, HubSession } from "./env";
import { HubError } from "./errors";
import { redirectWithFlash, takeFlash, type Flash } from "./flash";
import { readHubForm } from "./form";
import { Confirm, formatTime, Layout, PostForm, Secret, StackTable } from "./ui/layout";

const BASE = "/hub/webhooks";

function stateOf(e: endpoints.EndpointRecord): { label: string; badge: string } {
  if (e.enabled) return e.failingSince ? { label: `failing since ${formatTime(e.failingSince)}`, badge: "reconnect" } : { label: "enabled", badge: "live" };
  if (e.disabledReason === "gone") return { label: "disabled: the receiver answered 410 Gone", badge: "failed" };
  if (e.disabledReason === "failing") return { label: "disabled: every attempt failed for 5 days", badge: "failed" };
  return { label: "disabled", badge: "cancelled" };
}

const eventsText = (events: readonly WebhookEventType[] | null) => (events ? events.join(", ") : "all events");

async function listPage(c: Context<HubEnv>) {
  const session = c.get("session") as HubSession;
  const flash = await takeFlash(c);
  const items = await endpoints.listEndpoints(c.get("services"), session.userId);
  return c.html(
    <Layout title="Webhooks" session={session} nav="webhooks" nonce={c.get("secureHeadersNonce")} flash={flash}>
      <h1>Webhooks</h1>
      <p class="muted">
        Your endpoints get a signed POST when a post is published or fails, an account needs reconnecting, or a photo job ends, instead of polling. Messages
        follow Standard Webhooks: verify them with your endpoint's secret (<code>new Webhook(secret).verify(body, headers)</code> of the{" "}
        <code>standardwebhooks</code> package).
      </p>
      <section class="card" aria-labelledby="add">
        <h2 id="add">Add an endpoint</h2>
        <PostForm action={BASE} session={session} class="row">
          <div>
            <label for="webhook-url">URL</label>
            <input id="webhook-url" type="url" name="url" required maxlength={2048} placeholder="https://shop.example.com/hooks/shopkit" />
          </div>
          <div>
            <label for="webhook-description">Description (optional)</label>
            <input id="webhook-description" type="text" name="description" maxlength={500} placeholder="e.g. order system" />
          </div>
          <fieldset class="scopes">
            <legend>Events</legend>
            <label>
              <input type="radio" name="which" value="all" checked /> All events
            </label>
            <label>
              <input type="radio" name="which" value="some" /> Only these:
            </label>
            {WEBHOOK_EVENT_TYPES.filter((t) => t !== "webhook.test").map((type) => (
              <label class="indent" title={EVENT_DESCRIPTIONS[type]}>
                <input type="checkbox" name={`event_${type}`} value="on" /> <code>{type}</code>
              </label>
            ))}
          </fieldset>
          <button type="submit">Add endpoint</button>
        </PostForm>
      </section>
      <h2>Your endpoints</h2>
      {items.length === 0 ? (
        <p>No endpoints yet.</p>
      ) : (
        <StackTable columns={["URL", "Events", "Description", "State", "Created"]}>
          {items.map((e) => {
            const state = stateOf(e);
            return (
              <tr>
                <td data-label="URL">
                  <a href={`${BASE}/${e.id}`}>{e.url}</a>
                </td>
                <td data-label="Events">{eventsText(e.events)}</td>
                <td data-label="Description">{e.description || "—"}</td>
                <td data-label="State">
                  <span class={`badge ${state.badge}`}>{state.label}</span>
                </td>
                <td data-label="Created">{formatTime(e.createdAt)}</td>
              </tr>
            );
          })}
        </StackTable>
      )}
    </Layout>,
  );
}

async function endpointPage(c: Context<HubEnv>, id: string) {
  const session = c.get("session") as HubSession;
  const services = c.get("services");
  const endpoint = await found(() => endpoints.getEndpoint(services, session.userId, id));
  const flash = await takeFlash(c);
  const page = await endpoints.listDeliveries(services, session.userId, id, { limit: 50 });
  const state = stateOf(endpoint);
  const here = `${BASE}/${id}`;
  return c.html(
    <Layout
      title="Webhook endpoint"
      session={session}
      nav="webhooks"
      nonce={c.get("secureHeadersNonce")}
      flash={flash}
      refreshSeconds={page.items.some((d) => d.status === "pending" && d.nextAttemptAt) ? 3 : undefined}
    >
      <p class="small">
        <a href={BASE}>← Webhooks</a>
      </p>
      <h1>{endpoint.url}</h1>
      <p>
        <span class={`badge ${state.badge}`}>{state.label}</span> · {eventsText(endpoint.events)}
        {endpoint.description ? ` · ${endpoint.description}` : ""}
      </p>
      {flash?.webhookSecret ? (
        <section class="card" aria-labelledby="secret">
          <h2 id="secret">Signing secret</h2>
          <p>Copy it now: this is the only time it is shown. Your receiver verifies every message with it.</p>
          <Secret id="webhook-secret" value={flash.webhookSecret} label="Copy the signing secret" />
        </section>
      ) : null}
      <div class="row endpoint-actions">
        {endpoint.enabled ? (
          <PostForm action={`${here}/test`} session={session}>
            <button type="submit">Send a test</button>
          </PostForm>
        ) : null}
        <PostForm action={`${here}/rotate`} session={session}>
          <button type="submit" class="secondary">
            Rotate secret
          </button>
        </PostForm>
        <PostForm action={`${here}/${endpoint.enabled ? "disable" : "enable"}`} session={session}>
          <button type="submit" class="secondary">
            {endpoint.enabled ? "Disable" : "Enable"}
          </button>
        </PostForm>
        <a class="button danger" href={`${here}/delete`}>
          Delete
        </a>
      </div>
      <h2>Deliveries</h2>
      {page.items.length === 0 ? (
        <p>No messages yet. Send a test to see one.</p>
      ) : (
        <StackTable columns={["Event", "Message id", "State", "Attempts", "Next attempt", <span class="muted">Action</span>]}>
          {page.items.map((d) => (
            <tr>
              <td data-label="Event">
                <code>{d.eventType}</code>
                <div class="small muted">{formatTime(d.createdAt)}</div>
              </td>
              <td data-label="Message id">
                <code class="small">{d.webhookId}</code>
              </td>
              <td data-label="State">
                <span class={`badge ${d.status === "delivered" ? "published" : d.status}`}>{d.status}</span>
              </td>
              <td data-label="Attempts">
                {d.attempts.length === 0 ? (
                  "—"
                ) : (
                  <ol class="attempts">
                    {d.attempts.map((a) => (
                      <li>
                        {a.status !== null ? `HTTP ${a.status}` : (a.error ?? "no answer")} · {a.durationMs} ms · {formatTime(a.at)}
                      </li>
                    ))}
                  </ol>
                )}
              </td>
              <td data-label="Next attempt">
                {d.nextAttemptAt ? formatTime(d.nextAttemptAt) : d.status === "pending" && !endpoint.enabled ? "when the endpoint is enabled" : "—"}
              </td>
              <td>
                {endpoint.enabled && d.status !== "pending" ? (
                  <PostForm action={`${here}/deliveries/${d.id}/replay`} session={session}>
                    <button type="submit" class="secondary" aria-label={`Replay ${d.eventType} ${d.webhookId}`}>
                      Replay
                    </button>
                  </PostForm>
                ) : null}
              </td>
            </tr>
          ))}
        </StackTable>
      )}
    </Layout>,
  );
}

/** The API's 404 for another user's endpoint, as the hub's 404 page. */
async function found<T>(load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) throw new HubError(404, "No webhook endpoint of yours has that id.");
    throw err;
  }
}

/** Runs an action; a refusal of the API's (a URL not allowed, a disabled endpoint) becomes the page's error message. */
async function act(c: Context<HubEnv>, back: string, action: () => Promise<Flash>): Promise<Response> {
  let flash: Flash;
  try {
    flash = await action();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) throw new HubError(404, "No webhook endpoint of yours has that id.");
    if (err instanceof ApiError && err.status < 500) flash = { kind: "error", text: err.message.replace(/^url: /, "The URL: ") };
    else throw err;
  }
  return redirectWithFlash(c, back, flash);
}

export function createWebhookHubRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => listPage(c));

  router.post("/", async (c) => {
    const body = await readHubForm(c);
    const services = c.get("services");
    const userId = c.get("session")!.userId;
    const url = typeof body.url === "string" ? body.url.trim() : "";
    const description = typeof body.description === "string" ? body.description.trim() : "";
    const events = body.which === "some" ? WEBHOOK_EVENT_TYPES.filter((t) => body[`event_${t}`] === "on") : null;
    if (events && events.length === 0) return redirectWithFlash(c, BASE, { kind: "error", text: "Choose at least one event, or All events." });
    if (description.length > 500) return redirectWithFlash(c, BASE, { kind: "error", text: "The description may be at most 500 characters." });
    let created: Awaited<ReturnType<typeof endpoints.createEndpoint>>;
    try {
      created = await endpoints.createEndpoint(services, userId, { url, events, description });
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) return redirectWithFlash(c, BASE, { kind: "error", text: err.message.replace(/^url: /, "The URL: ") });
      throw err;
    }
    return redirectWithFlash(c, `${BASE}/${created.id}`, { kind: "ok", text: `Endpoint ${created.url} is added.`, webhookSecret: created.secret });
  });

  router.get("/:id", (c) => endpointPage(c, c.req.param("id")));

  router.post("/:id/test", async (c) => {
    await readHubForm(c);
    const id = c.req.param("id");
    return act(c, `${BASE}/${id}`, async () => {
      await endpoints.sendTest(c.get("services"), c.get("session")!.userId, id);
      return { kind: "ok", text: "A test message is on its way; its delivery shows below." };
    });
  });

  router.post("/:id/rotate", async (c) => {
    await readHubForm(c);
    const id = c.req.param("id");
    return act(c, `${BASE}/${id}`, async () => {
      const rotated = await endpoints.rotateSecret(c.get("services"), c.get("session")!.userId, id);
      return {
        kind: "ok",
        text: `The secret is rotated. Until ${formatTime(rotated.previousSecretExpiresAt)} messages carry signatures of both the old and the new secret (and of any secret rotated out in the day before).`,
        webhookSecret: rotated.secret,
      };
    });
  });

  for (const [path, enabled] of [
    ["enable", true],
    ["disable", false],
  ] as const) {
    router.post(`/:id/${path}`, async (c) => {
      await readHubForm(c);
      const id = c.req.param("id");
      return act(c, `${BASE}/${id}`, async () => {
        await endpoints.updateEndpoint(c.get("services"), c.get("session")!.userId, id, { enabled });
        return {
          kind: "ok",
          text: enabled ? "The endpoint is enabled; messages that waited are sent now." : "The endpoint is disabled; messages wait until you enable it.",
        };
      });
    });
  }

  router.post("/:id/deliveries/:deliveryId/replay", async (c) => {
    await readHubForm(c);
    const id = c.req.param("id");
    return act(c, `${BASE}/${id}`, async () => {
      await endpoints.replayDelivery(c.get("services"), c.get("session")!.userId, id, c.req.param("deliveryId"));
      return { kind: "ok", text: "The message is sent again, with the same message id." };
    });
  });

  router.get("/:id/delete", async (c) => {
    const session = c.get("session") as HubSession;
    const id = c.req.param("id");
    const endpoint = await found(() => endpoints.getEndpoint(c.get("services"), session.userId, id));
    return c.html(
      <Layout title="Delete endpoint" session={session} nav="webhooks">
        <Confirm
          session={session}
          question={`Delete the endpoint ${endpoint.url}?`}
          action={`${BASE}/${id}/delete`}
          button="Yes, delete it"
          back={`${BASE}/${id}`}
          backLabel="No, keep it"
        >
          <p>Nothing more is sent to it, and its delivery log is removed. This cannot be undone.</p>
        </Confirm>
      </Layout>,
    );
  });

  router.post("/:id/delete", async (c) => {
    const id = c.req.param("id");
    if ((await readHubForm(c)).confirm !== "yes") return c.redirect(`${BASE}/${encodeURIComponent(id)}/delete`, 303);
    return act(c, BASE, async () => {
      await endpoints.deleteEndpoint(c.get("services"), c.get("session")!.userId, id);
      return { kind: "ok", text: "The endpoint is deleted." };
    });
  });
  return router;
}
