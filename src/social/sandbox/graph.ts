/**
 * The sandbox Graph API, mounted at /sandbox/graph/{version}/...: only the endpoints the adapters use,
 * answering like the platform (string ids, Graph error bodies with real codes, container states).
 */
import { Hono, type Context } from "hono";
import type { AppEnv } from "../../http/env";
import { GRAPH_ERRORS, graphError } from "./graph-errors";
import { authorize, hostileInput, inProcessAnswer, readParams, type Caller, type Params } from "./graph-common";
import { getFeed, postFeed, postPhoto } from "./graph-page";
import { createContainer, listMedia, publishContainer, publishingLimit, readNode } from "./graph-photo";
import { limitPerClient } from "./limits";
import { accessToken, meAccounts, mePermissions } from "./oauth";
import * as store from "./store";

type EdgeHandler = (c: Context<AppEnv>, caller: Caller, params: Params) => Promise<Response>;

const EDGES: Record<Caller["platform"], Record<string, EdgeHandler>> = {
  pageplatform: { "POST feed": postFeed, "POST photos": postPhoto, "GET feed": getFeed },
  photoplatform: {
    "POST media": createContainer,
    "POST media_publish": publishContainer,
    "GET media": listMedia,
    "GET content_publishing_limit": (c, caller) => publishingLimit(c, caller),
  },
};

export function createSandboxGraphRoutes(): Hono<AppEnv> {
  const graph = new Hono<AppEnv>();
  // A call from this process gets its JSON answers without a web Response (whose body undici makes a stream of,
  // read back at once by the caller). An answer with more than a status (init, headers) stays with Hono.
  graph.use("*", async (c, next) => {
    const answer = inProcessAnswer(c);
    if (answer) {
      const json = c.json;
      c.json = ((body: unknown, arg?: unknown, headers?: unknown) =>
        headers === undefined && (arg === undefined || typeof arg === "number")
          ? answer(JSON.stringify(body), arg ?? 200)
          : json(body as never, arg as never, headers as never)) as typeof c.json;
    }
    await next();
  });
  // Tokens and the token exchange are no API key: each client address has its own budget (limits.ts).
  graph.use(
    "*",
    limitPerClient((c) => graphError(c, GRAPH_ERRORS.clientRateLimit)),
  );
  graph.use("*", async (c, next) => {
    const field = hostileInput(c, await readParams(c));
    if (field) return graphError(c, { ...GRAPH_ERRORS.invalidParam, message: `(#100) Invalid parameter: ${field}` });
    await next();
  });

  // Token exchange and the user's pages (the OAuth side); registered before the generic `/:id/:edge`.
  graph.get("/:version/oauth/access_token", async (c) => accessToken(c, await readParams(c)));
  graph.get("/:version/me/accounts", async (c) => meAccounts(c, await readParams(c)));
  graph.get("/:version/me/permissions", async (c) => mePermissions(c, await readParams(c)));

  graph.on(["GET", "POST"], "/:version/:id/:edge", async (c) => {
    if (!/^v\d+\.\d+$/.test(c.req.param("version"))) return graphError(c, GRAPH_ERRORS.unknownObject);
    const params = await readParams(c);
    const caller = await authorize(c, params, c.req.param("id"));
    if (caller instanceof Response) return caller;
    const handler = EDGES[caller.platform][`${c.req.method} ${c.req.param("edge")}`];
    return handler ? handler(c, caller, params) : graphError(c, GRAPH_ERRORS.unknownEdge);
  });

  graph.get("/:version/:id", async (c) => {
    const params = await readParams(c);
    const item = await store.getItem(c.get("services").db, c.req.param("id"));
    const caller = await authorize(c, params, item?.platformAccountId ?? null);
    if (caller instanceof Response) return caller;
    // Another owner's object does not exist for this token, whatever its account id.
    if (!item || item.owner !== caller.owner) return graphError(c, GRAPH_ERRORS.unknownObject);
    return readNode(c, item);
  });

  graph.all("*", (c) => graphError(c, GRAPH_ERRORS.unknownObject));
  return graph;
}
