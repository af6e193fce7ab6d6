/**
 * The memory of a process on this machine, from Linux's /proc: what the workerd tests read to bound the
 * Worker's memory (Miniflare runs workerd as a child process of the test).
 *
 * VmRSS is the resident memory now, VmHWM its peak since the process started or since the peak was last
 * reset (writing "5" to /proc/<pid>/clear_refs; the kernel allows it for our own child processes).
 *
 * @example
 * const pid = childProcessNamed("workerd");
 * const meter = memoryMeter(pid);
 * meter.reset();
 * await work();
 * const { rssMiB, peakMiB } = meter.read();
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";

/** The pid of the one descendant of `root` (default this process) whose command name is `name`. */
export function childProcessNamed(name: string, root = process.pid): number {
  const parents = new Map<number, number>();
  const names = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      // pid (comm) state ppid ...: comm may hold spaces and parentheses, so split after the last ")".
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      parents.set(Number(entry), ppid);
      names.set(Number(entry), comm);
    } catch {
      // the process ended while we looked
    }
  }
  const descends = (pid: number) => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === root) return true;
    return false;
  };
  const found = [...names].filter(([pid, comm]) => comm === name && descends(pid)).map(([pid]) => pid);
  if (found.length !== 1) throw new Error(`expected one ${name} process under ${root}, found ${found.length}`);
  return found[0]!;
}

export interface MemoryReading {
  /** Resident set now, MiB. */
  rssMiB: number;
  /** Peak resident set since start or the last reset, MiB. */
  peakMiB: number;
}

export interface MemoryMeter {
  read(): MemoryReading;
  /** Resets the peak to the current resident set; false when the kernel does not allow it. */
  reset(): boolean;
}

export function memoryMeter(pid: number): MemoryMeter {
  return {
    read() {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
      return { rssMiB: kib("VmRSS") / 1024, peakMiB: kib("VmHWM") / 1024 };
    },
    reset() {
      try {
        writeFileSync(`/proc/${pid}/clear_refs`, "5");
        return true;
      } catch {
        return false;
      }
    },
  };
}

/**
 * The app process of a server spawned by `npm start`'s script: the process with the server's DATA_DIR in its
 * environment whose parent (the start script) has it too.
 */
export function appPid(dataDir: string): number {
  const mine = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(`DATA_DIR=${dataDir}`)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      mine.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // not ours, or gone
    }
  }
  const app = [...mine].filter(([, parent]) => mine.has(parent)).map(([pid]) => pid);
  if (app.length !== 1) throw new Error(`expected one app process for ${dataDir}, found ${app.length} (of ${mine.size})`);
  return app[0]!;
}

/**
 * The peak resident growth (MiB) of the server spawned on `dataDir` while `work` runs, and what `work`
 * returned: the kernel's high-water mark (VmHWM) is reset first, so a peak between two readings counts.
 */
export async function peakGrowthOf<T>(dataDir: string, work: () => Promise<T>): Promise<{ growthMiB: number; value: T }> {
  const meter = memoryMeter(appPid(dataDir));
  if (!meter.reset()) throw new Error("the kernel does not let this process reset the server's peak (clear_refs)");
  const before = meter.read().rssMiB;
  const value = await work();
  return { growthMiB: meter.read().peakMiB - before, value };
}
