/**
 * DATA_DIR is its owner's alone after every start of the real server (`functions/node.ts`): a directory
 * left 755 with 644 files in it (the database among them) comes out 700 with 600 files, all the way down,
 * and a symbolic link inside is neither followed nor changed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chmod, lstat, mkdir, mkdtemp, readdir, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServerProcess, type ServerProcess } from "../helpers/server-process";

interface Entry {
  path: string;
  kind: "dir" | "file" | "link";
  mode: number;
  ino: number;
}

/** Every path under `dir` with its lstat mode bits and inode, links included and not followed. */
async function modes(dir: string): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const stats = await lstat(path);
    const found = { path, mode: stats.mode & 0o7777, ino: stats.ino };
    if (entry.isSymbolicLink()) out.push({ ...found, kind: "link" });
    else if (entry.isDirectory()) out.push({ ...found, kind: "dir" }, ...(await modes(path)));
    else out.push({ ...found, kind: "file" });
  }
  return out;
}

/** Makes every directory under (and at) `dir` 755 and every file 644, as a copy or an older start left them. */
async function loosen(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  for (const entry of await modes(dir)) if (entry.kind !== "link") await chmod(entry.path, entry.kind === "dir" ? 0o755 : 0o644);
}

describe("DATA_DIR modes", () => {
  let server: ServerProcess;
  let outside: string;

  beforeAll(async () => {
    server = await startServerProcess();
    outside = await mkdtemp(join(tmpdir(), "shopkit-outside-"));
  }, 90_000);
  afterAll(async () => {
    await server?.dispose();
    if (outside) await rm(outside, { recursive: true, force: true });
  });

  it("a DATA_DIR left 755 with 644 files is 700 with 600 files after a start, and links are left alone", async () => {
    await server.kill("SIGTERM");
    const dir = server.dataDir;
    await mkdir(join(dir, "files", "media"), { recursive: true });
    await writeFile(join(dir, "files", "media", "photo.jpg"), "jpeg");
    await writeFile(join(dir, "notes.txt"), "left here");
    const target = join(outside, "target.txt");
    await writeFile(target, "outside DATA_DIR");
    await mkdir(join(outside, "dir"));
    await symlink(target, join(dir, "link-to-file"));
    await symlink(join(outside, "dir"), join(dir, "files", "link-to-dir"));
    await loosen(dir);
    await chmod(target, 0o644);
    await chmod(join(outside, "dir"), 0o755);
    expect((await stat(dir)).mode & 0o777).toBe(0o755);
    expect((await stat(join(dir, "pg"))).mode & 0o777).toBe(0o755);
    expect((await stat(join(dir, "token-key"))).mode & 0o777).toBe(0o644);
    const loose = await modes(dir);
    expect(loose.filter((e) => e.kind === "file" && e.path.startsWith(join(dir, "pg"))).length).toBeGreaterThan(100);

    const restarted = Date.now();
    await server.restart();
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200);

    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    // Everything that was there before the start. A file the database removed or wrote anew since (its
    // relation cache, at every start) is a new file below a 700 directory, made 600 at the next start.
    const wrong: string[] = [];
    for (const entry of loose) {
      const now = await lstat(entry.path).catch(() => null);
      if (!now || now.ino !== entry.ino || now.birthtimeMs >= restarted) continue;
      const mode = now.mode & 0o7777;
      const want = entry.kind === "dir" ? 0o700 : entry.kind === "file" ? 0o600 : entry.mode;
      if (mode !== want) wrong.push(`${entry.path} ${mode.toString(8)}`);
    }
    expect(wrong).toEqual([]);
    for (const name of ["notes.txt", "token-key", "dev-api-key", join("files", "media", "photo.jpg")])
      expect((await stat(join(dir, name))).mode & 0o777, name).toBe(0o600);
    // The links' targets, outside DATA_DIR, keep their modes.
    expect((await stat(target)).mode & 0o777).toBe(0o644);
    expect((await stat(join(outside, "dir"))).mode & 0o777).toBe(0o755);
  }, 120_000);
});
