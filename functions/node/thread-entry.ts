/**
 * Where a worker thread's code is: dist/<name>.js, the plain-JavaScript module the build makes of
 * functions/node/<name>.ts (scripts/build.mjs), so a thread starts without a TypeScript loader. Built, this
 * module is part of dist/node.js (or dist/admin.js) and the threads' files are beside it. Run from the
 * TypeScript sources (vitest, `npm run dev`), it is the repository's dist/, built first when it is older than
 * the sources (once per process).
 *
 * @example
 * new Worker(await threadEntry("delivery-worker"), { execArgv: [] });
 */
export type ThreadName = "heavy-thread" | "delivery-worker";

let built: Promise<unknown> | undefined;

export async function threadEntry(name: ThreadName): Promise<URL> {
  if (!import.meta.url.endsWith(".ts")) return new URL(`./${name}.js`, import.meta.url);
  // A computed specifier: the build leaves it alone, and nothing of the build script enters dist/.
  const script = new URL("../../scripts/build.mjs", import.meta.url).href;
  built ??= import(script).then((build: { buildIfStale(): Promise<boolean> }) => build.buildIfStale());
  await built;
  return new URL(`../../dist/${name}.js`, import.meta.url);
}
