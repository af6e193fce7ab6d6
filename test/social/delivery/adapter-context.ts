/**
 * A PublishContext for adapter tests: the adapter talks to a Graph fake; the write-ahead hooks record
 * what the engine would persist, in order.
 */
import type { PublishContext } from "../../../src/social/platforms";

export interface TestContext extends PublishContext {
  events: string[];
  saved: Array<string | null>;
}

export function testContext(baseUrl: string, overrides: Partial<PublishContext> = {}): TestContext {
  const events: string[] = [];
  const saved: Array<string | null> = [];
  const ctx: TestContext = {
    events,
    saved,
    graph: { baseUrl, version: "v23.0", fetch, token: "tok-123", timeoutMs: 1500 },
    platformAccountId: "1000",
    text: "Hello\n\n#tag",
    imageUrls: [],
    since: new Date(Date.now() - 60_000),
    containerId: null,
    async saveContainer(id) {
      saved.push(id);
      events.push(`save:${id}`);
      ctx.containerId = id;
    },
    async beforePublish() {
      events.push("beforePublish");
    },
    async knownPostIds() {
      return new Set<string>();
    },
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    now: () => new Date(),
    poll: { intervalMs: 20, maxWaitMs: 1000 },
    ...overrides,
  };
  return ctx;
}
