/**
 * Sandbox control routes for an API key's owner: connect a sandbox account, inject faults, and read what
 * the sandbox platforms hold. Only the owner's connected accounts can be touched, and each one is looked up
 * in the sandbox its token speaks in (the owner's own, or the consent that connected it through the hub),
 * so the same account id held by two users never mixes their posts or faults. Inputs are validated like
 * the API (422 for NUL and control characters, lengths, types, unknown or repeated fields and parameters, as
 * everywhere: src/http/validate.ts). Each route declares its access the way the API's operations do
 * (`accessMiddleware`: a `social` key, then the write budget), ahead of its handler.
 */
import { Hono } from "hono";
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { socialAccounts } from "../../../db/schema";
import type { AppEnv } from "../../http/env";
import { accessMiddleware, authenticatedNotFound, type Access } from "../../http/openapi";
import { ApiError } from "../../http/errors";
import { parseWith, readJson } from "../../http/json";
import { NoQuerySchema, parseQuery } from "../../http/validate";
import { accountIdOf, PLATFORMS, toAccountRecord } from "../accounts";
import { parseHashtags } from "../platforms/caption";
import { FAULT_KINDS } from "./graph-errors";
import * as store from "./store";

// Control characters cannot be stored in Postgres text (NUL) or are never meaningful in a name or an id.
const NO_CONTROL = /^[^\u0000-\u001f\u007f]*$/;
/**
 * Text that is Unicode: no lone UTF-16 surrogate (JSON's "\ud800" parses to one), which PostgreSQL's text and
 * JSON cannot hold as it stands. A refinement, not a pattern, so it costs one linear pass whatever the length.
 */
const wellFormed = <T extends z.ZodType<string>>(schema: T) => schema.refine((s) => s.isWellFormed(), { error: "must not contain a lone UTF-16 surrogate" });
const AccountIdSchema = wellFormed(z.string().min(1).max(200).regex(NO_CONTROL, { error: "must not contain control characters" }));

const ConnectSchema = z.strictObject({
  platform: z.enum(PLATFORMS as unknown as ["pageplatform", "photoplatform"]),
  name: wellFormed(z.string().regex(NO_CONTROL, { error: "must not contain control characters" }).trim().min(1).max(200)),
  platformAccountId: z
    .string()
    .regex(/^\d{1,30}$/, "must be the platform's numeric id")
    .optional(),
});

const FaultSchema = z.strictObject({
  accountId: AccountIdSchema,
  kind: z.enum(FAULT_KINDS as unknown as ["transient"]),
  times: z.number().int().min(0).max(1000).default(1),
});

const PostsQuerySchema = z.strictObject({ accountId: AccountIdSchema });

/** Every control route, reads included, counts against the write budget: they change or reveal sandbox state. */
const access: Access = { scope: "social", rateLimit: "social-write" };

export function createSandboxControlRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  // Per route, never "*": this router is mounted at the sandbox root beside the token-checked Graph routes.
  router.post("/accounts", ...accessMiddleware(access), async (c) => {
    parseQuery(c, NoQuerySchema);
    const body = parseWith(ConnectSchema, await readJson(c));
    const { db, tokens, clock } = c.get("services");
    const platformAccountId = body.platformAccountId ?? store.newGraphId();
    const token = store.newSandboxToken(body.platform);
    await store.saveToken(db, token, { owner: c.get("userId"), platformAccountId });
    const id = accountIdOf(body.platform, platformAccountId);
    const values = { name: body.name, tokenCiphertext: await tokens.encrypt(token), tokenStatus: "active", tokenError: null, updatedAt: clock.now() };
    const [row] = await db
      .insert(socialAccounts)
      .values({ id, userId: c.get("userId"), platform: body.platform, platformAccountId, ...values })
      .onConflictDoUpdate({ target: [socialAccounts.userId, socialAccounts.id], set: values })
      .returning();
    return c.json({ data: toAccountRecord(row!) }, 201);
  });

  router.post("/faults", ...accessMiddleware(access), async (c) => {
    parseQuery(c, NoQuerySchema);
    const body = parseWith(FaultSchema, await readJson(c));
    const account = await ownAccount(c.get("services"), c.get("userId"), body.accountId);
    await store.setFault(c.get("services").db, account.sandbox, body.kind as (typeof FAULT_KINDS)[number], body.times);
    return c.json({ data: { accountId: account.id, kind: body.kind, remaining: body.times } }, 201);
  });

  router.get("/posts", ...accessMiddleware(access), async (c) => {
    // `?accountId=a&accountId=b` is refused with a sentence, not read as either.
    const { accountId } = parseQuery(c, PostsQuerySchema);
    const account = await ownAccount(c.get("services"), c.get("userId"), accountId);
    const kinds = account.platform === "pageplatform" ? ["feed"] : ["media"];
    const items = await store.listItems(c.get("services").db, account.sandbox, kinds);
    return c.json({
      data: {
        accountId: account.id,
        items: items.map((i) => ({
          id: i.id,
          kind: i.kind,
          caption: i.caption,
          hashtags: parseHashtags(i.caption),
          imageUrls: i.imageUrls,
          createdAt: i.createdAt.toISOString(),
        })),
      },
    });
  });

  // Other methods on these paths: the key first, as for the routes themselves, then 404.
  for (const path of ["/accounts", "/faults", "/posts"]) router.all(path, ...authenticatedNotFound(access));
  return router;
}

/** The user's connected account and the sandbox account behind it (found through the account's own token). */
async function ownAccount(services: AppEnv["Variables"]["services"], userId: string, accountId: string) {
  const [row] = await services.db
    .select()
    .from(socialAccounts)
    .where(and(eq(socialAccounts.userId, userId), eq(socialAccounts.id, accountId)))
    .limit(1);
  if (!row) throw new ApiError("ACCOUNT_NOT_FOUND", `No connected account ${accountId} for this API key's owner.`);
  const token = await services.tokens.decrypt(row.tokenCiphertext).catch(() => null);
  const spoken = token ? await store.tokenAccount(services.db, token) : null;
  // A page's token also speaks for its linked photoplatform account: the owner comes from the token, the id from the row.
  const sandbox: store.SandboxAccount = { owner: spoken?.owner ?? userId, platformAccountId: row.platformAccountId };
  return { ...row, sandbox };
}
