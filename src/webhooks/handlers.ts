/**
 * The webhooks area's handlers, one per operation of openapi.ts, typed by its route. They run after the
 * route's key check and rate limit.
 */
import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../http/env";
import * as endpoints from "./endpoints";
import { type routes, WEBHOOKS_BASE_PATH } from "./openapi";

export const createWebhook: RouteHandler<typeof routes.createWebhook, AppEnv> = async (c) => {
  const created = await endpoints.createEndpoint(c.get("services"), c.get("userId"), c.req.valid("json"));
  c.header("Location", `${WEBHOOKS_BASE_PATH}/${created.id}`);
  return c.json({ data: created }, 201);
};

export const listWebhooks: RouteHandler<typeof routes.listWebhooks, AppEnv> = async (c) => {
  const items = await endpoints.listEndpoints(c.get("services"), c.get("userId"));
  return c.json({ data: { items } }, 200);
};

export const getWebhook: RouteHandler<typeof routes.getWebhook, AppEnv> = async (c) => {
  const endpoint = await endpoints.getEndpoint(c.get("services"), c.get("userId"), c.req.valid("param").id);
  return c.json({ data: endpoint }, 200);
};

export const updateWebhook: RouteHandler<typeof routes.updateWebhook, AppEnv> = async (c) => {
  const endpoint = await endpoints.updateEndpoint(c.get("services"), c.get("userId"), c.req.valid("param").id, c.req.valid("json"));
  return c.json({ data: endpoint }, 200);
};

export const deleteWebhook: RouteHandler<typeof routes.deleteWebhook, AppEnv> = async (c) => {
  await endpoints.deleteEndpoint(c.get("services"), c.get("userId"), c.req.valid("param").id);
  return c.body(null, 204);
};

export const rotateWebhookSecret: RouteHandler<typeof routes.rotateWebhookSecret, AppEnv> = async (c) => {
  const rotated = await endpoints.rotateSecret(c.get("services"), c.get("userId"), c.req.valid("param").id);
  return c.json({ data: rotated }, 200);
};

export const testWebhook: RouteHandler<typeof routes.testWebhook, AppEnv> = async (c) => {
  const delivery = await endpoints.sendTest(c.get("services"), c.get("userId"), c.req.valid("param").id);
  return c.json({ data: delivery }, 202);
};

export const listWebhookDeliveries: RouteHandler<typeof routes.listWebhookDeliveries, AppEnv> = async (c) => {
  const page = await endpoints.listDeliveries(c.get("services"), c.get("userId"), c.req.valid("param").id, c.req.valid("query"));
  return c.json({ data: page }, 200);
};

export const replayWebhookDelivery: RouteHandler<typeof routes.replayWebhookDelivery, AppEnv> = async (c) => {
  const { id, deliveryId } = c.req.valid("param");
  const delivery = await endpoints.replayDelivery(c.get("services"), c.get("userId"), id, deliveryId);
  return c.json({ data: delivery }, 202);
};
