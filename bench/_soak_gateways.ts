/**
 * The soak's two gateway processes on one KV file: one that lives throughout (the trainer's, and
 * the one whose memory is watched), and one SIGKILLed every few seconds and started again. Their
 * resident memory is sampled from `/proc/<pid>/status`.
 *
 * @module
 */
import { type GatewayProcess, spawnGateway } from "../test/process/_gateway_process.ts";
import { residentMiB } from "../lib/sandbox/mod.ts";
import { sleep } from "../lib/timing/mod.ts";
import type { Random } from "./_random.ts";

/** Gateway output lines that tell of something gone wrong. */
const PROBLEM = /Unexpected error|Uncaught|panicked|failed:|Cannot /;
/**
 * Restarts tried in a row, a second apart, before the soak records a failure and goes on without
 * the process: a process that starts while the database is down stops, naming `STORE_URL`, and is
 * tried again until the database is back.
 */
const RESTART_ATTEMPTS = 20;

/** Resident memory of the two processes at one moment, in MiB (`null`: not running). */
export interface RssSample {
  /** Milliseconds since the pair started. */
  readonly atMs: number;
  readonly stable: number | null;
  readonly killed: number | null;
}

/** Options of {@linkcode startGatewayPair}. */
export interface GatewayPairOptions {
  /** Environment of both processes (`KV_PATH`, `SGLANG_URL`…). */
  readonly env: Record<string, string>;
  /**
   * The processes are two hosts (on a shared store): each runs in a folder of its own with a
   * `HOST_ID` of its own, the killed one started again as the same host.
   */
  readonly hosts?: boolean;
  /** The killed process lives a random time in this range, in milliseconds. */
  readonly killEveryMs: readonly [number, number];
  readonly rssEveryMs: number;
  readonly random: Random;
}

/** Two running gateway processes. */
export interface GatewayPair {
  /** The process that is never killed. */
  readonly stable: GatewayProcess;
  /** URLs of the processes running now. */
  up(): string[];
  /** SIGKILLs so far, restarts, and restarts that failed (their errors). */
  readonly kills: number;
  readonly restarts: number;
  readonly restartFailures: readonly string[];
  readonly rss: readonly RssSample[];
  /** Output lines of either process that tell of an error. */
  problems(): string[];
  /** Stops killing; resolves once the killed process runs again. */
  stopKilling(): Promise<void>;
  /** Stops both processes (SIGTERM: in-flight requests finish). */
  close(): Promise<void>;
}

/** Starts both processes, then kills and restarts the second one until told to stop. */
export async function startGatewayPair(options: GatewayPairOptions): Promise<GatewayPair> {
  const folders: string[] = [];
  const hostOf = async (name: string): Promise<[Record<string, string>, string | undefined]> => {
    if (!options.hosts) return [options.env, undefined];
    const folder = await Deno.makeTempDir({ prefix: `soak-${name}-` });
    folders.push(folder);
    return [{ ...options.env, HOST_ID: name, SANDBOX_ROOT: `${folder}/sandboxes` }, folder];
  };
  const [stableHost, killedHost] = [await hostOf("soak-stable"), await hostOf("soak-killed")];
  const spawnKilled = () => spawnGateway(...killedHost);
  const started = await Promise.allSettled([spawnGateway(...stableHost), spawnKilled()]);
  const failed = started.find((result) => result.status === "rejected");
  if (failed) {
    for (const result of started) if (result.status === "fulfilled") await result.value.close();
    throw (failed as PromiseRejectedResult).reason;
  }
  const [stable, first] = started.map((result) =>
    (result as PromiseFulfilledResult<GatewayProcess>).value
  );
  let victim: GatewayProcess | null = first;
  const problems: string[] = [];
  const restartFailures: string[] = [];
  const rss: RssSample[] = [];
  let kills = 0;
  let restarts = 0;
  const began = Date.now();
  const stop = new AbortController();

  const sample = () =>
    rss.push({
      atMs: Date.now() - began,
      stable: residentMiB(stable.pid),
      killed: victim && residentMiB(victim.pid),
    });
  sample();
  const sampler = setInterval(sample, options.rssEveryMs);

  const killing = (async () => {
    while (!stop.signal.aborted) {
      // Cut short by the stop, which ends the loop below.
      await sleep(options.random.between(...options.killEveryMs), stop.signal).catch(() => {});
      if (stop.signal.aborted || !victim) break;
      const dying = victim;
      victim = null; // out of `up()` before it dies
      await dying.kill("SIGKILL");
      kills++;
      problems.push(...problemLines(dying));
      const failures: string[] = [];
      for (let attempt = 1; !victim && attempt <= RESTART_ATTEMPTS; attempt++) {
        try {
          victim = await spawnKilled();
          restarts++;
        } catch (error) {
          failures.push(String(error));
          await sleep(1_000);
        }
      }
      if (!victim) restartFailures.push(...failures);
      if (!victim) break;
    }
  })();

  return {
    stable,
    up: () => victim ? [stable.url, victim.url] : [stable.url],
    get kills() {
      return kills;
    },
    get restarts() {
      return restarts;
    },
    restartFailures,
    rss,
    problems: () => [...problems, ...[stable, victim].flatMap((g) => g ? problemLines(g) : [])],
    stopKilling: async () => {
      stop.abort();
      await killing;
    },
    close: async () => {
      stop.abort();
      await killing;
      clearInterval(sampler);
      sample();
      await Promise.all([stable.close(), victim?.close()]);
      for (const folder of folders) await Deno.remove(folder, { recursive: true });
    },
  };
}

/** The lines of a process's output that tell of an error, each with the next lines it owns. */
function problemLines(gateway: GatewayProcess): string[] {
  const lines = gateway.output().split("\n");
  const out: string[] = [];
  lines.forEach((line, i) => {
    if (!PROBLEM.test(line)) return;
    // An error's message and first stack frames follow it on their own lines.
    const more = lines.slice(i + 1, i + 4).filter((next) => /^\s/.test(next));
    out.push([line, ...more].join("\n"));
  });
  return out;
}
