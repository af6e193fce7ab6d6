/**
 * Sandbox control routes for an API key's owner: connect a sandbox account, inject faults, and read what
 * the sandbox platforms hold. Only the owner's connected accounts can be touched.
 */
import { Hono } from "hono";
import { and, eq } from "drizzle-orm";
import { z } from "zod";
import { socialAccounts } from "../../../db/schema";
import type { AppEnv } from "../../http/env";
import { requireAuth } from "../../http/auth";
import { ApiError } from "../../http/errors";
import { parseWith, readJson } from "../../http/json";
import { PLATFORMS, toAccountRecord } from "../accounts";
import { parseHashtags } from "../platforms/caption";
import { FAULT_KINDS } from "./graph-errors";
import * as store from "./store";

const ConnectSchema = z.object({
  platform: z.enum(PLATFORMS as unknown as ["pageplatform", "photoplatform"]),
  name: z.string().trim().min(1).max(200),
  platformAccountId: z.string().regex(/^\d{1,30}$/, "must be the platform's numeric id").optional(),
});

const FaultSchema = z.object({
  accountId: z.string().min(1),
  kind: z.enum(FAULT_KINDS as unknown as ["transient"]),
  times: z.number().int().min(0).max(1000).default(1),
});

export function createSandboxControlRoutes(): Hono<AppEnv> {
  const router = new Hono<AppEnv>();
  // Per route, not "*": this router is mounted at the sandbox root beside the token-checked Graph routes.
  for (const path of ["/accounts", "/faults", "/posts"]) router.use(path, requireAuth());

  router.post("/accounts", async (c) => {
    const body = parseWith(ConnectSchema, await readJson(c));
    const { db, tokens, clock } = c.var.services;
    const platformAccountId = body.platformAccountId ?? store.newGraphId();
    const token = store.newSandboxToken(body.platform);
    await store.saveToken(db, token, platformAccountId);
    const id = `${body.platform}:${platformAccountId}`;
    const values = { name: body.name, tokenCiphertext: await tokens.encrypt(token), tokenStatus: "active", tokenError: null, updatedAt: clock.now() };
    const [row] = await db
      .insert(socialAccounts)
      .values({ id, userId: c.var.userId, platform: body.platform, platformAccountId, ...values })
      .onConflictDoUpdate({ target: [socialAccounts.userId, socialAccounts.id], set: values })
      .returning();
    return c.json({ data: toAccountRecord(row!) }, 201);
  });

  router.post("/faults", async (c) => {
    const body = parseWith(FaultSchema, await readJson(c));
    const account = await ownAccount(c.var.services.db, c.var.userId, body.accountId);
    await store.setFault(c.var.services.db, account.platformAccountId, body.kind as (typeof FAULT_KINDS)[number], body.times);
    return c.json({ data: { accountId: account.id, kind: body.kind, remaining: body.times } }, 201);
  });

  router.get("/posts", async (c) => {
    const accountId = c.req.query("accountId");
    if (!accountId) throw new ApiError("VALIDATION_FAILED", "accountId: required", { details: [{ path: "accountId", message: "required" }] });
    const account = await ownAccount(c.var.services.db, c.var.userId, accountId);
    const kinds = account.platform === "pageplatform" ? ["feed"] : ["media"];
    const items = await store.listItems(c.var.services.db, account.platformAccountId, kinds);
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
  return router;
}

async function ownAccount(db: AppEnv["Variables"]["services"]["db"], userId: string, accountId: string) {
  const [row] = await db.select().from(socialAccounts).where(and(eq(socialAccounts.userId, userId), eq(socialAccounts.id, accountId))).limit(1);
  if (!row) throw new ApiError("ACCOUNT_NOT_FOUND", `No connected account ${accountId} for this API key's owner.`);
  return row;
}
