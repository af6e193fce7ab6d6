/**
 * Pure mappings for photoplatform (Graph Instagram-style content publishing): container states, the
 * publishing quota answer, and media items as the generic items reconciliation matches on.
 */
import type { PlatformItem } from "../match";

/** IN_PROGRESS -> FINISHED -> PUBLISHED; ERROR and EXPIRED are dead ends (EXPIRED: not published within 24 h). */
export type ContainerStatus = "IN_PROGRESS" | "FINISHED" | "PUBLISHED" | "ERROR" | "EXPIRED";

export interface ContainerState {
  id?: string;
  status_code?: string;
  /** On ERROR: a text holding the error subcode. */
  status?: string;
}

export interface MediaItem {
  id: string;
  caption?: string;
  timestamp?: string;
}

export interface PublishingLimit {
  data?: Array<{ quota_usage?: number; config?: { quota_total?: number; quota_duration?: number } }>;
}

export function containerStatus(state: ContainerState): ContainerStatus | "UNKNOWN" {
  const code = state.status_code;
  return code === "IN_PROGRESS" || code === "FINISHED" || code === "PUBLISHED" || code === "ERROR" || code === "EXPIRED" ? code : "UNKNOWN";
}

/** Usage and total when the platform says the quota is used up; null when there is room (or no readable answer). */
export function quotaExhausted(limit: PublishingLimit): { usage: number; total: number; durationS: number } | null {
  const entry = limit.data?.[0];
  const usage = Number(entry?.quota_usage);
  const total = Number(entry?.config?.quota_total);
  if (!Number.isFinite(usage) || !Number.isFinite(total) || total <= 0) return null;
  return usage >= total ? { usage, total, durationS: Number(entry?.config?.quota_duration) || 86_400 } : null;
}

export function mediaItemsToPlatformItems(items: readonly MediaItem[]): PlatformItem[] {
  return items.filter((i) => typeof i?.id === "string").map((i) => ({ id: i.id, text: i.caption, time: i.timestamp }));
}
