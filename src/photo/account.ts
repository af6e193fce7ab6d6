/**
 * What a user reads about their own area B account, shared by the API and the hub's pages: the credit
 * balance with a page of movements, and a page of the gallery (dates filtered as area C's post lists are).
 *
 * @example
 * const credits = await creditsView(services, userId, { limit: 20 });
 * const gallery = await galleryPage(services, userId, { templateId: "studio-plinth" });
 */
import { ApiError } from "../http/errors";
import type { Services } from "../services";
import { creditState, listMovements, openAccount } from "./credits";
import { galleryView, listGallery } from "./gallery";
import { PAGE_DEFAULT_LIMIT, type GalleryQueryInput } from "./schemas";

export async function creditsView(services: Pick<Services, "db" | "config">, userId: string, page: { limit?: number; offset?: number }) {
  await openAccount(services.db, userId, services.config.photoSignupCredits);
  const limit = page.limit ?? PAGE_DEFAULT_LIMIT;
  const offset = page.offset ?? 0;
  const [state, movements] = await Promise.all([creditState(services.db, userId), listMovements(services.db, userId, { limit, offset })]);
  return {
    ...state,
    movements: {
      items: movements.items.map((m) => ({ ...m, createdAt: m.createdAt.toISOString() })),
      total: movements.total,
      hasMore: offset + movements.items.length < movements.total,
      limit,
      offset,
    },
  };
}

const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
/** Years 1 to 9999, where PostgreSQL and toISOString agree. */
const CALENDAR = { first: new Date("0001-01-01T00:00:00.000Z"), last: new Date("9999-12-31T23:59:59.999Z") };

export async function galleryPage(services: Pick<Services, "db" | "storage">, userId: string, q: GalleryQueryInput) {
  const limit = q.limit ?? PAGE_DEFAULT_LIMIT;
  const offset = q.offset ?? 0;
  const start = (v: string) => (DATE_ONLY.test(v) ? new Date(`${v}T00:00:00Z`) : new Date(v));
  const from = q.fromDate ? start(q.fromDate) : undefined;
  // A date-only toDate is its whole day; a timestamp is inclusive (the next millisecond, exclusive).
  const to = q.toDate ? new Date(start(q.toDate).getTime() + (DATE_ONLY.test(q.toDate) ? 86_400_000 : 1)) : undefined;
  if (from && to && from >= to) {
    throw new ApiError("VALIDATION_FAILED", "fromDate: must not be after toDate", { details: [{ path: "fromDate", message: "must not be after toDate" }] });
  }
  const clamp = (d: Date) => (d < CALENDAR.first ? CALENDAR.first : d > CALENDAR.last ? CALENDAR.last : d);
  const page = await listGallery(services, userId, {
    templateId: q.templateId,
    from: from && clamp(from),
    to: to && clamp(to),
    limit,
    offset,
  });
  return {
    items: page.items.map((row) => galleryView(services, row)),
    total: page.total,
    hasMore: offset + page.items.length < page.total,
    limit,
    offset,
  };
}
