/**
 * Area C's handlers, one per operation of openapi.ts, each typed by its route (`RouteHandler<typeof route,
 * AppEnv>`): what it reads is what the route validated, and what it answers is a response the route declares.
 * They run after the route's key check and rate limit.
 *
 * @example
 * router.openapi(routes.getPost, getPost, validated(routes.getPost));
 */
import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../http/env";
import { declaredJson } from "../http/openapi";
import { listAccounts as accountsOf } from "./accounts";
import { parseIdempotencyKey } from "./idempotency";
import { createMedia as create, getMedia as mediaOf } from "./media";
import { routes, SOCIAL_BASE_PATH } from "./openapi";
import { cancelPost as cancel, createPost as publish, getPostJson as postJsonOf, listPosts as postsOf } from "./posts";

export const listAccounts: RouteHandler<typeof routes.listAccounts, AppEnv> = async (c) => {
  const accounts = await accountsOf(c.get("services").db, c.get("userId"));
  return c.json({ data: { connectionStatus: "connected", accounts } }, 200);
};

export const createMedia: RouteHandler<typeof routes.createMedia, AppEnv> = async (c) => {
  const media = await create(c.get("services"), c.get("userId"), c.req.valid("json"));
  c.header("Location", `${SOCIAL_BASE_PATH}/media/${media.id}`);
  return c.json({ data: media }, 201);
};

export const getMedia: RouteHandler<typeof routes.getMedia, AppEnv> = async (c) => {
  const media = await mediaOf(c.get("services").db, c.get("userId"), c.req.valid("param").id);
  return c.json({ data: media }, 200);
};

export const createPost: RouteHandler<typeof routes.createPost, AppEnv> = async (c) => {
  const key = parseIdempotencyKey(c.req.valid("header")["Idempotency-Key"]);
  const result = await publish(c.get("services"), c.get("userId"), key, c.req.valid("json"));
  c.header("Location", `${SOCIAL_BASE_PATH}/posts/${result.post.id}`);
  if (result.replayed) c.header("Idempotency-Replayed", "true");
  return c.json({ data: result.post }, result.status);
};

export const listPosts: RouteHandler<typeof routes.listPosts, AppEnv> = async (c) => {
  const { items, ...page } = await postsOf(c.get("services"), c.get("userId"), c.req.valid("query"));
  // The items come as JSON text from the database (post-record.ts `recordJson`); the rest are numbers and a boolean.
  const body = `{"data":{"items":[${items}],${JSON.stringify(page).slice(1)}}`;
  return declaredJson(routes.listPosts, c.body(body, 200, { "Content-Type": "application/json" }), 200);
};

export const getPost: RouteHandler<typeof routes.getPost, AppEnv> = async (c) => {
  // The record comes as JSON text from the database (post-record.ts `recordJson`), written out as it is.
  const post = await postJsonOf(c.get("services"), c.get("userId"), c.req.valid("param").id);
  return declaredJson(routes.getPost, c.body(`{"data":${post}}`, 200, { "Content-Type": "application/json" }), 200);
};

export const cancelPost: RouteHandler<typeof routes.cancelPost, AppEnv> = async (c) => {
  const post = await cancel(c.get("services"), c.get("userId"), c.req.valid("param").id);
  return c.json({ data: post }, 200);
};
