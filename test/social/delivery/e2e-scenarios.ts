/**
 * End-to-end scenarios shared by the embedded server's suites (e2e.test.ts on PGlite, e2e-postgres.test.ts on
 * PostgreSQL, where the publishing runs in the server's delivery thread): each drives a running server through
 * the public API and the sandbox's control routes and asserts what a customer would see.
 */
import { expect } from "vitest";
import type { ServerProcess } from "../../helpers/server-process";
import { allSettled, settled, targetOf, waitFor, type E2eClient, type PostRecord } from "./e2e-client";

/**
 * An immediate post reaches published on a page and a photo account, once each, as written. How fast is
 * `npm run bench -- schedule`'s figure; here the wait is only bounded, so a loaded machine cannot fail it.
 */
export async function immediateToBoth(api: E2eClient): Promise<void> {
  const [page, photo] = await Promise.all([api.connect("pageplatform"), api.connect("photoplatform")]);
  const created = await api.createPost({ accountIds: [page.id, photo.id], caption: "Launch day", hashtags: ["coffee", "mugs"], images: [await api.image()] });
  const post = await settled(api, created.id, 20_000);
  expect(post.status).toBe("published");
  for (const account of [page, photo]) {
    const t = targetOf(post, account.id);
    expect(t).toMatchObject({ status: "published", attempts: 1, error: null });
    const items = await api.sandboxPosts(account.id);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ id: t.providerPostId, caption: "Launch day\n\n#coffee #mugs", hashtags: ["coffee", "mugs"], imageUrls: post.imageUrls });
  }
}

/** A post scheduled 3 s ahead is not published before its time, and is published once after it (how soon after is `npm run bench -- schedule`). */
export async function scheduledOnTime(api: E2eClient): Promise<void> {
  const page = await api.connect("pageplatform", "on time");
  const at = new Date(Date.now() + 3000);
  const created = await api.createPost({ accountIds: page.id, caption: "On time", scheduledFor: at.toISOString() });
  await new Promise((r) => setTimeout(r, 2500));
  expect(await api.sandboxPosts(page.id)).toEqual([]);
  const post = await settled(api, created.id, 20_000);
  const publishedAt = new Date(targetOf(post, page.id).publishedAt!).getTime();
  expect(publishedAt).toBeGreaterThanOrEqual(at.getTime());
  const items = await api.sandboxPosts(page.id);
  expect(items).toHaveLength(1);
  expect(new Date(items[0]!.createdAt).getTime()).toBeGreaterThanOrEqual(at.getTime());
}

/**
 * SIGKILL in the middle of publishing 20 posts (each publishing call held 1.5 s by a `slow` fault): after a
 * restart on the same data every target is published exactly once. The restarted server must say it released
 * the dead one's claims (at once on PGlite, whose claims are all the dead process's; on PostgreSQL once their
 * locks have expired), so the kill did land mid-publish.
 */
export async function killedMidPublish(server: ServerProcess, api: E2eClient, settleMs: number): Promise<void> {
  const [page, photo] = await Promise.all([api.connect("pageplatform", "crash page"), api.connect("photoplatform", "crash photo")]);
  await Promise.all([api.fault(page.id, "slow", 20), api.fault(photo.id, "slow", 20)]);
  const image = await api.image();
  const created: PostRecord[] = [];
  for (let i = 0; i < 20; i += 5) {
    created.push(
      ...(await Promise.all(
        [i, i + 1, i + 2, i + 3, i + 4].map((n) =>
          api.createPost(n % 2 ? { accountIds: photo.id, caption: `crash ${n}`, images: [image] } : { accountIds: page.id, caption: `crash ${n}` }),
        ),
      )),
    );
  }
  const published = async () => (await api.sandboxPosts(page.id)).length + (await api.sandboxPosts(photo.id)).length;
  const atKill = await waitFor(
    "a few posts to be out",
    async () => {
      const n = await published();
      return n >= 3 ? n : undefined;
    },
    30_000,
    100,
  );
  await server.kill("SIGKILL");
  expect(atKill).toBeLessThan(20);

  await server.restart();
  const after = await allSettled(
    api,
    created.map((p) => p.id),
    settleMs,
  );
  expect(server.output()).toMatch(/released publishing claims of a stopped publisher/);
  const pageItems = await api.sandboxPosts(page.id);
  const photoItems = await api.sandboxPosts(photo.id);
  expect(pageItems).toHaveLength(10);
  expect(photoItems).toHaveLength(10);
  const captions = [...pageItems, ...photoItems].map((i) => i.caption).sort();
  expect(captions).toEqual(Array.from({ length: 20 }, (_, n) => `crash ${n}`).sort());
  const itemIds = new Set([...pageItems, ...photoItems].map((i) => i.id));
  for (const post of after) {
    const t = post.accounts[0]!;
    expect(t.status).toBe("published");
    expect(itemIds.has(t.providerPostId!)).toBe(true);
  }
  expect(new Set(after.map((p) => p.accounts[0]!.providerPostId)).size).toBe(20);
}
