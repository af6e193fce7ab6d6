/**
 * Connected accounts of a user, with what each platform accepts.
 */
import { asc, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { prepared } from "../../db/prepared";
import { socialAccounts } from "../../db/schema";

export type Platform = "pageplatform" | "photoplatform";
export const PLATFORMS: readonly Platform[] = ["pageplatform", "photoplatform"];

/** An account's id: `platform:platformAccountId`. Every id is made here (the hub, the sandbox), so its platform can be read back from it. */
export const accountIdOf = (platform: Platform, platformAccountId: string) => `${platform}:${platformAccountId}`;

/** The platform an account id names (`accountIdOf`), or null when it names none. */
export function platformOfAccountId(id: string): Platform | null {
  const colon = id.indexOf(":");
  const platform = id.slice(0, colon) as Platform;
  return colon > 0 && PLATFORMS.includes(platform) ? platform : null;
}

export interface Capabilities {
  text: boolean;
  maxImages: number;
  maxCaptionLength: number;
}

export const CAPABILITIES: Record<Platform, Capabilities & { minImages: number }> = {
  pageplatform: { text: true, maxImages: 10, maxCaptionLength: 63_206, minImages: 0 },
  photoplatform: { text: false, maxImages: 1, maxCaptionLength: 2_200, minImages: 1 },
};

export interface AccountRecord {
  id: string;
  platform: Platform;
  platformAccountId: string;
  name: string;
  selected: boolean;
  canPublish: boolean;
  tokenStatus: string;
  capabilities: Capabilities;
}

/** The columns an account's record is made of (`toAccountRecord`). */
const RECORD_COLUMNS = {
  id: socialAccounts.id,
  platform: socialAccounts.platform,
  platformAccountId: socialAccounts.platformAccountId,
  name: socialAccounts.name,
  selected: socialAccounts.selected,
  tokenStatus: socialAccounts.tokenStatus,
};

export function toAccountRecord(row: Pick<typeof socialAccounts.$inferSelect, keyof typeof RECORD_COLUMNS>): AccountRecord {
  const platform = row.platform as Platform;
  const { minImages: _min, ...capabilities } = CAPABILITIES[platform];
  return {
    id: row.id,
    platform,
    platformAccountId: row.platformAccountId,
    name: row.name,
    selected: row.selected,
    canPublish: row.tokenStatus === "active",
    tokenStatus: row.tokenStatus,
    capabilities,
  };
}

export async function listAccounts(db: Db, userId: string): Promise<AccountRecord[]> {
  const rows = await prepared(db, "accounts_of_user", () =>
    db
      .select(RECORD_COLUMNS)
      .from(socialAccounts)
      .where(eq(socialAccounts.userId, sql.placeholder("userId")))
      .orderBy(asc(socialAccounts.createdAt)),
  ).execute({ userId });
  return rows.map(toAccountRecord);
}
