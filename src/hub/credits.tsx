/**
 * Credits page: the AI generation credits each product photo draws on: the balance, what is held for images
 * being made, the images made per model this month, and the movements (grants and charges), newest first,
 * a page at a time. Read through area B's own functions (src/photo/account.ts, credits.ts), so the figures
 * are the API's (`GET /api/image/credits`).
 */
import { Hono, type Context } from "hono";
import { creditsView } from "../photo/account";
import { chargesByModel } from "../photo/credits";
import type { HubEnv, HubSession } from "./env";
import { takeFlash } from "./flash";
import { formatTime, Layout, StackTable } from "./ui/layout";

const PAGE_SIZE = 20;

async function creditsPage(c: Context<HubEnv>) {
  const session = c.get("session") as HubSession;
  const services = c.get("services");
  const flash = await takeFlash(c);
  const offset = Math.min(10_000, Math.max(0, Number.parseInt(c.req.query("offset") ?? "0", 10) || 0));
  const view = await creditsView(services, session.userId, { limit: PAGE_SIZE, offset });
  const now = services.clock.now();
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const month = await chargesByModel(services.db, session.userId, monthStart);
  const monthName = monthStart.toLocaleString("en", { month: "long", year: "numeric", timeZone: "UTC" });
  const { items, total, hasMore } = view.movements;
  return c.html(
    <Layout title="Credits" session={session} nav="credits" flash={flash}>
      <h1>Credits</h1>
      <p class="muted">
        Each product photo costs its model's credits at its resolution (the model list: <code>GET /api/image/image-model-options</code>). A request is priced
        whole before anything is made; an image that fails gives its credits back at once.
      </p>
      <section class="card" aria-labelledby="balance">
        <h2 id="balance">Balance</h2>
        <p class="balance">
          <strong data-testid="balance">{view.balance}</strong> credits
          {view.reserved ? (
            <span>
              {" "}
              · <span data-testid="reserved">{view.reserved}</span> held for images being made · {view.available} available
            </span>
          ) : null}
        </p>
        <p class="small muted">Need more? Ask the operator of this service to add credits to {session.email}.</p>
      </section>
      <h2>Images this month ({monthName})</h2>
      {month.length === 0 ? (
        <p>No images yet this month.</p>
      ) : (
        <StackTable columns={["Model", "Resolution", "Images", "Credits"]}>
          {month.map((m) => (
            <tr>
              <td data-label="Model">{m.model}</td>
              <td data-label="Resolution">{m.resolution}</td>
              <td data-label="Images">{m.images}</td>
              <td data-label="Credits">{m.credits}</td>
            </tr>
          ))}
        </StackTable>
      )}
      <h2>Movements</h2>
      {items.length === 0 ? (
        <p>No movements yet.</p>
      ) : (
        <StackTable columns={["When", "What", "Credits", "Balance after"]}>
          {items.map((m) => (
            <tr>
              <td data-label="When">{formatTime(m.createdAt)}</td>
              <td data-label="What">
                {m.kind === "grant" ? (
                  <span>
                    <span class="badge published">grant</span> {m.note ?? ""}
                  </span>
                ) : (
                  <span>
                    <span class="badge">image</span> {m.model} at {m.resolution}
                  </span>
                )}
              </td>
              <td data-label="Credits">{m.amount > 0 ? `+${m.amount}` : String(m.amount)}</td>
              <td data-label="Balance after">{m.balanceAfter}</td>
            </tr>
          ))}
        </StackTable>
      )}
      {total > PAGE_SIZE ? (
        <nav class="pager" aria-label="Movements pages">
          {offset > 0 ? <a href={`/hub/credits?offset=${Math.max(0, offset - PAGE_SIZE)}`}>← Newer</a> : null}{" "}
          <span class="muted">
            {offset + 1}–{offset + items.length} of {total}
          </span>{" "}
          {hasMore ? <a href={`/hub/credits?offset=${offset + PAGE_SIZE}`}>Older →</a> : null}
        </nav>
      ) : null}
    </Layout>,
  );
}

export function createCreditRoutes(): Hono<HubEnv> {
  const router = new Hono<HubEnv>();
  router.get("/", (c) => creditsPage(c));
  return router;
}
