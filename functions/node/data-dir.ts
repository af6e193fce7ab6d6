/**
 * DATA_DIR holds the embedded database, the platform token key, the admin token and stored files, so it is
 * its owner's alone: at every start the directory and everything in it is set to 700 (directories) and 600
 * (files), whatever modes an earlier run, a copy or an unpacked backup left. The directory itself goes
 * first, so nobody else can reach what is below while the rest is walked. Symbolic links inside are neither
 * followed nor changed (DATA_DIR itself may be one: it is the path the operator chose). What the server
 * writes later (uploads, files the database rewrites) lies below the 700 directory and is made 600 at the
 * next start.
 *
 * @example
 * await prepareDataDir(config.dataDir);
 */
import { chmod, lstat, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";

export const DATA_DIR_MODE = 0o700;
export const DATA_FILE_MODE = 0o600;

/** Creates DATA_DIR when missing and makes it and its contents private; throws naming a path it cannot change. */
export async function prepareDataDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: DATA_DIR_MODE });
  await setMode(dir, DATA_DIR_MODE, true);
  await walk(dir);
}

async function walk(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [];
    throw err;
  });
  for (const entry of entries) {
    // The entry's own type (lstat's): a link to a directory is a link, not a directory.
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      await setMode(path, DATA_DIR_MODE);
      await walk(path);
    } else if (entry.isFile()) {
      await setMode(path, DATA_FILE_MODE);
    }
  }
}

/** Sets `mode` unless it is set already; a path removed meanwhile (a file being renamed into place) is skipped. */
async function setMode(path: string, mode: number, followLink = false): Promise<void> {
  try {
    const stats = await lstat(path);
    if (stats.isSymbolicLink() && !followLink) return;
    if (!stats.isSymbolicLink() && (stats.mode & 0o7777) === mode) return;
    await chmod(path, mode);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw new Error(`cannot make ${path} private (mode ${mode.toString(8)}): ${(err as Error).message}`);
  }
}
