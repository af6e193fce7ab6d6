/**
 * Hub errors are pages, not JSON: `HubError` carries a status and a sentence for a person; `renderHubError`
 * turns it (or an API error thrown by area C functions, or anything else) into the error page.
 */
import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ApiError } from "../http/errors";
import type { HubEnv } from "./env";
import { Layout } from "./ui/layout";

export class HubError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    message: string,
  ) {
    super(message);
  }
}

export function renderHubError(err: unknown, c: Context<HubEnv>): Response | Promise<Response> {
  let status: ContentfulStatusCode = 500;
  let text = `Something went wrong on our side. Try again; quote request id ${c.get("requestId")} if it persists.`;
  if (err instanceof HubError) {
    status = err.status;
    text = err.message;
  } else if (err instanceof ApiError) {
    status = err.status as ContentfulStatusCode;
    text = status === 404 ? "Not found: there is nothing here, or it belongs to someone else." : err.message;
  } else {
    c.get("services")?.log.error("hub error", { requestId: c.get("requestId"), error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) });
  }
  const title = status === 404 ? "Not found" : status >= 500 ? "Error" : "Refused";
  c.header("Cache-Control", "no-store");
  return c.html(
    <Layout title={title} session={c.get("session") ?? null}>
      <h1>{title}</h1>
      <p class="flash error" role="alert">
        {text}
      </p>
      <p>
        <a href="/hub">Back to the hub</a>
      </p>
    </Layout>,
    status,
  );
}
