/**
 * The system programs some suites run (cjpeg, cwebp, chromium, openssl), and the Debian package that brings
 * each. `npm run setup` installs them all. Without one, a suite that needs it is skipped with one line naming
 * the package; under CI (where .ci/run installs them) a missing program fails the suite instead.
 *
 * @example
 * const haveCjpeg = haveSystemTool("entropy-split", "cjpeg");
 * describe.skipIf(!haveCjpeg)("…", () => { … });
 */
import { spawnSync } from "node:child_process";

/** The programs and the Debian package that brings each. */
export const SYSTEM_TOOLS = {
  cjpeg: "libjpeg-turbo-progs",
  cwebp: "webp",
  dwebp: "webp",
  chromium: "chromium",
  openssl: "openssl",
} as const;

export type SystemTool = keyof typeof SYSTEM_TOOLS;

/** Whether `tool` is on PATH (chromium: also as chromium-browser). */
export function onPath(tool: SystemTool): boolean {
  const names = tool === "chromium" ? ["chromium", "chromium-browser"] : [tool];
  return names.some((name) => spawnSync("sh", ["-c", 'command -v "$1"', "sh", name], { stdio: "ignore" }).status === 0);
}

/**
 * Whether every one of `tools` is installed. When one is missing: under CI it throws (the suite fails to load);
 * elsewhere it warns one line, "<suite>: skipped; <tool> is missing: apt-get install <package> (or npm run setup)".
 */
export function haveSystemTool(suite: string, ...tools: SystemTool[]): boolean {
  const missing = tools.filter((tool) => !onPath(tool));
  if (missing.length === 0) return true;
  const packages = [...new Set(missing.map((tool) => SYSTEM_TOOLS[tool]))].join(" ");
  const absent = `${missing.join(" and ")} ${missing.length > 1 ? "are" : "is"} missing`;
  if (process.env.CI) throw new Error(`${suite}: ${absent}; .ci/run installs it (npm run setup: apt-get install ${packages})`);
  console.warn(`${suite}: skipped; ${absent}: apt-get install ${packages} (or npm run setup)`);
  return false;
}
