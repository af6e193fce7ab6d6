/**
 * CPU time from /proc (Linux), for benchmarks that set a service's CPU beside its throughput: the server's
 * processes (found by their DATA_DIR), the machine's PostgreSQL processes, and the CPU either used since a
 * reading. The kernel counts in 10 ms ticks. Every PostgreSQL process on the machine is counted (run nothing
 * else against it meanwhile), and a process that ended between two readings is not (a connection's backend
 * that closed: the benchmarks keep theirs open).
 *
 * @example
 * const before = await cpuByPid(await postgresPids());
 * // ... load ...
 * const dbMs = await cpuSince(before, await postgresPids());
 */
import { readdir, readFile } from "node:fs/promises";

/** The server's processes (the tsx wrapper and the app): those whose environment names its DATA_DIR (Linux). */
export function serverPids(dataDir: string): Promise<string[]> {
  return pidsWhere("environ", (environ) => environ.split("\0").includes(`DATA_DIR=${dataDir}`));
}

/** The machine's PostgreSQL processes (Linux; on the embedded default there are none, or idle ones). */
export function postgresPids(): Promise<string[]> {
  return pidsWhere("comm", (comm) => comm.trim() === "postgres");
}

/** The workerd processes this process started (Miniflare runs workerd as its child; Linux). */
export function workerdPids(): Promise<string[]> {
  return pidsWhere("stat", (stat) => {
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const ppid = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1];
    return comm === "workerd" && ppid === String(process.pid);
  });
}

/** The processes whose /proc/<pid>/<file> passes `test` (Linux). */
async function pidsWhere(file: "environ" | "comm" | "stat", test: (content: string) => boolean): Promise<string[]> {
  const pids: string[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    if (test(await readFile(`/proc/${entry}/${file}`, "utf8").catch(() => ""))) pids.push(entry);
  }
  return pids;
}

/** User plus system CPU time of `pids`, from /proc/<pid>/stat (clock ticks of 10 ms). */
export async function cpuMs(pids: readonly string[]): Promise<number> {
  let ms = 0;
  for (const t of (await cpuByPid(pids)).values()) ms += t;
  return ms;
}

export async function cpuByPid(pids: readonly string[]): Promise<Map<string, number>> {
  const byPid = new Map<string, number>();
  for (const pid of pids) {
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // After the command name: state is field 3 of stat, utime and stime fields 14 and 15.
    if (fields.length > 13) byPid.set(pid, (Number(fields[11]) + Number(fields[12])) * 10);
  }
  return byPid;
}

/** CPU time `pids` used since `before` was read; a process started since then counts from zero (a new connection's backend). */
export async function cpuSince(before: Map<string, number>, pids: readonly string[]): Promise<number> {
  let ms = 0;
  for (const [pid, t] of await cpuByPid(pids)) ms += t - (before.get(pid) ?? 0);
  return ms;
}
