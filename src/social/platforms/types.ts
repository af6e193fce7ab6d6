/**
 * The provider port of area C: one adapter per platform, driven by the delivery engine.
 * An adapter does the platform's HTTP dance; the engine owns claims, records and retries. The context
 * hands the adapter the few write-ahead hooks it needs so a retry can never publish twice.
 */
import type { GraphTarget } from "./graph-http";

export interface PublishContext {
  graph: GraphTarget;
  platformAccountId: string;
  /** Caption with hashtags appended (see caption.ts). */
  text: string;
  imageUrls: string[];
  /** Nothing of this delivery can exist on the platform before this instant (the delivery's creation). */
  since: Date;
  /** An intermediate platform id saved by an earlier attempt (photoplatform container). */
  containerId: string | null;
  /** Persist an intermediate id before the next step; throws if this attempt no longer holds the claim. */
  saveContainer(id: string | null): Promise<void>;
  /** Write-ahead "the next call may publish": called right before the call that makes content visible. */
  beforePublish(): Promise<void>;
  /** Platform ids already recorded by other deliveries of this account: reconciliation never claims them. */
  knownPostIds(): Promise<Set<string>>;
  sleep(ms: number): Promise<void>;
  now(): Date;
  /** Container status polling: interval and total budget. */
  poll: { intervalMs: number; maxWaitMs: number };
}

export interface PublishResult {
  /** The platform's id of the visible post (null only when the platform confirmed publishing but the id could not be read). */
  providerPostId: string | null;
}

export interface PlatformAdapter {
  /** Publish once. Throws PlatformError (classified) on failure. */
  publish(ctx: PublishContext): Promise<PublishResult>;
  /** After an ambiguous attempt: find what that attempt published, or null when nothing was. Reads only. */
  reconcile(ctx: PublishContext): Promise<PublishResult | null>;
}
