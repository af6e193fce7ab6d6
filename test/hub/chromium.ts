/**
 * Headless Chromium for the hub's browser tests: Debian's `chromium` from PATH (installed by `npm run setup`,
 * which .ci/run runs) driven by playwright-core; `--no-sandbox` only when running as root, where Chromium's sandbox
 * cannot start. Axe (via @axe-core/playwright) reports accessibility violations of a page.
 */
import { execFileSync } from "node:child_process";
import AxeBuilder from "@axe-core/playwright";
import { chromium, type Browser, type Page } from "playwright-core";

export function chromiumPath(): string {
  try {
    return execFileSync("sh", ["-c", "command -v chromium || command -v chromium-browser"], { encoding: "utf8" }).trim().split("\n")[0]!;
  } catch {
    throw new Error("Chromium is not installed: apt-get install -y chromium (or npm run setup)");
  }
}

export async function launchChromium(): Promise<Browser> {
  const root = process.getuid?.() === 0;
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: root ? ["--no-sandbox"] : [] });
}

/** Serious and critical axe violations of the page as it is now, one line each (empty when none). */
export async function seriousViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).analyze();
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${page.url()}: ${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}
