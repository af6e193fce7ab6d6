/**
 * The admin commands, shared by the CLI (direct database access) and the running server's loopback admin
 * route (used when the embedded database is held by `npm start`).
 *
 * @example
 * await runAdminCommand(db, { command: "user:create", email: "a@b.c" }); // { output: "sk_..." }
 */
import type { Db } from "../../db/client";
import type { Services } from "../../src/services";
import { createLoginLink } from "../../src/hub/login-links";
import {
  createApiKey,
  createUser,
  describeScopes,
  findUserByEmail,
  keyNameProblem,
  listApiKeys,
  parseOrigins,
  parseScopes,
  revokeApiKey,
  type ApiKeyScope,
} from "../../src/http/api-keys";
import { mayHavePages } from "../../src/lib/scopes";
import { usageTotals } from "../../src/photo/ledger";
import { creditState, grantCredits, openAccount } from "../../src/photo/credits";
import { DEFAULT_SIGNUP_CREDITS } from "../../src/config";

export interface AdminRequest {
  command: string;
  email?: string;
  name?: string;
  prefix?: string;
  /** Comma-separated scopes (`qr`, `photo`, `social`, `all`); absent: every area. */
  scopes?: string;
  /** Comma-separated origins of the pages a `qr` key may be used from; absent: any. */
  origins?: string;
  /** `credits`: how many credits to grant (a whole number from 1 to 1,000,000). */
  add?: string;
  /** `credits`: why, kept on the ledger's movement. */
  note?: string;
}

export interface AdminResult {
  ok: boolean;
  /** What the CLI prints on stdout. */
  output: string;
}

/** The command names runAdminCommand knows; the CLI refuses any other, with the usage, before it opens anything. */
export const ADMIN_COMMANDS = ["user:create", "key:create", "key:revoke", "key:list", "login-link", "usage", "credits"] as const;

export const ADMIN_USAGE = `usage: npm run admin -- <command>
  user:create --email E [--scopes S]
                                   create a user; prints its first API key alone on a line
  key:create  --email E [--name N] [--scopes S] [--origins O]
                                   create another key for the user; prints it alone on a line.
                                   S: comma-separated areas the key may call: qr, photo, social
                                   (default: all). A key shown in public pages (<img> tags) should
                                   be --scopes qr. O (qr keys only): comma-separated origins of the
                                   pages it may be used from, e.g. https://shop.example
  key:revoke  --prefix P           revoke the key whose prefix (first 11 characters) is P
  key:list    --email E            list the user's keys (prefix, name, scopes, pages, created, last used, state)
  login-link  --email E            print a one-time hub sign-in link for the user (valid 15 minutes)
  usage       --email E            the user's product-photography usage: images, credits, USD and INR, per model
  credits     --email E [--add N [--note T]]
                                   grant N AI generation credits (with a note on the ledger), or
                                   without --add show the balance; prints balance and reserved`;

/** `hub`: what sign-in links need (the service's public base URL, a clock); without it, login-link is refused. */
export async function runAdminCommand(db: Db, req: AdminRequest, hub?: Pick<Services, "config" | "clock" | "apiKeyCache">): Promise<AdminResult> {
  const needEmail = () => {
    if (!req.email || !/^[^@\s]+@[^@\s]+$/.test(req.email)) throw new AdminError("--email must be an e-mail address");
    return req.email;
  };
  const scopes = (): ApiKeyScope[] | null => {
    if (req.scopes === undefined) return null;
    try {
      return parseScopes(req.scopes);
    } catch (err) {
      throw new AdminError(`--scopes: ${(err as Error).message}`);
    }
  };
  const origins = (keyScopes: ApiKeyScope[] | null): string[] | null => {
    if (req.origins === undefined) return null;
    if (!mayHavePages(keyScopes)) throw new AdminError("--origins is only for a key made with --scopes qr (a key that can publish or buy belongs on a server)");
    try {
      return parseOrigins(req.origins);
    } catch (err) {
      throw new AdminError(`--origins: ${(err as Error).message}`);
    }
  };
  const keyName = () => {
    const name = req.name ?? "default";
    const problem = keyNameProblem(name);
    if (problem) throw new AdminError(`--name: ${problem}`);
    return name;
  };
  switch (req.command) {
    case "user:create": {
      const email = needEmail();
      const keyScopes = scopes();
      const name = keyName();
      if (await findUserByEmail(db, email)) throw new AdminError(`a user with e-mail ${email} exists already`);
      const { userId } = await createUser(db, email);
      const { key } = await createApiKey(db, userId, name, { scopes: keyScopes });
      return { ok: true, output: key };
    }
    case "key:create": {
      const keyScopes = scopes();
      const allowedOrigins = origins(keyScopes);
      const name = keyName();
      const user = await findUserByEmail(db, needEmail());
      if (!user) throw new AdminError(`no user with e-mail ${req.email}`);
      const { key } = await createApiKey(db, user.userId, name, { scopes: keyScopes, allowedOrigins });
      return { ok: true, output: key };
    }
    case "key:revoke": {
      if (!req.prefix) throw new AdminError("--prefix is required (the first 11 characters of the key, as key:list shows)");
      if (!(await revokeApiKey(db, req.prefix))) throw new AdminError(`no live key with prefix ${req.prefix}`);
      hub?.apiKeyCache?.clear();
      return { ok: true, output: `revoked ${req.prefix}` };
    }
    case "key:list": {
      const user = await findUserByEmail(db, needEmail());
      if (!user) throw new AdminError(`no user with e-mail ${req.email}`);
      const keys = await listApiKeys(db, user.userId);
      const lines = keys.map((k) =>
        [
          k.prefix,
          k.name,
          describeScopes(k.scopes),
          k.allowedOrigins?.join(",") ?? "any",
          k.createdAt,
          k.lastUsedAt ?? "-",
          k.revokedAt ? `revoked ${k.revokedAt}` : "live",
        ].join("\t"),
      );
      return { ok: true, output: ["prefix\tname\tscopes\tpages\tcreated\tlast used\tstate", ...lines].join("\n") };
    }
    case "usage": {
      const user = await findUserByEmail(db, needEmail());
      if (!user) throw new AdminError(`no user with e-mail ${req.email}`);
      const u = await usageTotals(db, user.userId);
      const lines = u.byModel.map((m) => [m.model, m.resolution, m.images, m.credits, m.usd, m.inr].join("\t"));
      return {
        ok: true,
        output: ["model\tresolution\timages\tcredits\tusd\tinr", ...lines, ["total", "", u.images, u.credits, u.usd, u.inr].join("\t")].join("\n"),
      };
    }
    case "credits": {
      const user = await findUserByEmail(db, needEmail());
      if (!user) throw new AdminError(`no user with e-mail ${req.email}`);
      const signup = hub?.config.photoSignupCredits ?? DEFAULT_SIGNUP_CREDITS;
      if (req.note !== undefined && req.add === undefined) throw new AdminError("--note goes with --add");
      if (req.add !== undefined) {
        const amount = Number(req.add);
        if (!/^\d{1,7}$/.test(req.add) || amount < 1 || amount > 1_000_000) throw new AdminError("--add must be a whole number of credits from 1 to 1000000");
        const note = req.note?.trim() || null;
        if (note && note.length > 200) throw new AdminError("--note must be at most 200 characters");
        await grantCredits(db, user.userId, amount, note, signup);
      } else {
        await openAccount(db, user.userId, signup);
      }
      const state = await creditState(db, user.userId);
      return { ok: true, output: `balance\t${state.balance}\nreserved\t${state.reserved}\navailable\t${state.available}` };
    }
    case "login-link": {
      const user = await findUserByEmail(db, needEmail());
      if (!user) throw new AdminError(`no user with e-mail ${req.email}`);
      if (!hub) throw new AdminError("login-link needs the service's configuration");
      return { ok: true, output: await createLoginLink({ db, ...hub }, user.userId) };
    }
    default:
      throw new AdminError(`unknown command "${req.command}"\n${ADMIN_USAGE}`);
  }
}

export class AdminError extends Error {}
