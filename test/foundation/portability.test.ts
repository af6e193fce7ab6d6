/**
 * The house rule that keeps src/ runnable in workerd: no process.env, no top-level Node-only imports.
 * (The worker test builds the real bundle; this catches the mistake with a readable message first.)
 */
import { describe, expect, it } from "vitest";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";

const ROOT = new URL("../..", import.meta.url).pathname;
const NODE_ONLY = /^\s*import\s[^;]*?from\s+["'](node:[^"']+|fs|path|os|net|http|https|child_process|pg|@electric-sql\/pglite|undici|sharp)["']/m;

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await sourceFiles(full)));
    else if (/\.tsx?$/.test(entry.name)) out.push(full);
  }
  return out;
}

describe("src/ runs unchanged on Workers", () => {
  it("never reads process.env and never imports a Node-only module at top level", async () => {
    const offenders: string[] = [];
    for (const file of [...(await sourceFiles(join(ROOT, "src"))), join(ROOT, "db/client.ts"), join(ROOT, "db/schema.ts")]) {
      const text = await readFile(file, "utf8");
      if (/process\.env/.test(text)) offenders.push(`${relative(ROOT, file)}: reads process.env`);
      const m = NODE_ONLY.exec(text);
      if (m) offenders.push(`${relative(ROOT, file)}: imports ${m[1]}`);
    }
    expect(offenders).toEqual([]);
  });
});
