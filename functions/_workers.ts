/**
 * One gateway worker process per core (`WORKERS`), all listening on one port (`SO_REUSEPORT`:
 * the kernel spreads connections across them) and sharing the KV file, whose atomic commits and
 * leases keep every session exact whichever worker serves a turn (docs/DESIGN.md §6.3, §7).
 *
 * The supervisor runs no requests itself. It picks the port, starts the built-in scripted engine
 * when no `ENGINE_URL` is set (one engine for all workers), starts the workers, prints the
 * banner once every one listens, restarts a worker that dies, and on SIGINT/SIGTERM stops them
 * gracefully. A worker's stdin is a pipe from the supervisor: when the supervisor dies, however
 * it dies, the pipe closes and the worker stops gracefully too, so no worker outlives it.
 *
 * @module
 */
import type { Config } from "../lib/config/mod.ts";
import { sleep } from "../lib/timing/mod.ts";
import { heapFlags, memoryShares } from "../lib/cache/mod.ts";
import { startScriptedEngine } from "../lib/scripted_engine/mod.ts";
import { listeningOn, SCRIPTED_WARNING } from "./_banner.ts";
import { loadServedTokenizer } from "../lib/model/mod.ts";

/** What a worker prints once it listens: `Worker <i> (pid <p>) ready on <url>`. */
export const WORKER_READY = /^Worker (\d+) \(pid (\d+)\) ready on (\S+)/m;

/** How a worker is told it is one: `serve.ts --worker <i>`. */
export function workerIndex(args: readonly string[]): number | null {
  const at = args.indexOf("--worker");
  if (at < 0) return null;
  const index = Number(args[at + 1]);
  if (!Number.isInteger(index) || index < 0) throw new Error(`Bad --worker: ${args[at + 1]}`);
  return index;
}

/** Wait before a dead worker is started again. */
const RESTART_DELAY_MS = 1_000;

interface Worker {
  readonly index: number;
  child: Deno.ChildProcess;
}

/**
 * Runs `config.workers` workers until SIGINT or SIGTERM; resolves with the exit code.
 *
 * @example
 * ```ts ignore
 * import { resolveConfig } from "../lib/config/mod.ts";
 * import { supervise } from "./_workers.ts";
 * // Serves until the process is signalled, then exits with the workers' status.
 * Deno.exit(await supervise(resolveConfig(Deno.env.toObject())));
 * ```
 */
export async function supervise(config: Config): Promise<number> {
  const port = config.port === 0 ? freePort(config.host) : config.port;
  const env: Record<string, string> = {
    PORT: String(port),
    // Each worker's isolates collect their garbage before MEMORY_BUDGET_MB, not after (V8 fixes
    // its heap limits as an isolate starts); flags the operator gives are kept as given.
    DENO_V8_FLAGS: Deno.env.get("DENO_V8_FLAGS") ?? heapFlags(memoryShares(config.memoryBudgetMb)),
  };
  // Placed by the gateway, generation goes to ENGINE_WORKERS: no engine URL is needed.
  const scripted = config.engineUrl === null && config.enginePlacement !== "gateway"
    ? await startScriptedEngine({
      tokenizer: await loadServedTokenizer(config),
      latencyMs: config.scriptedLatencyMs,
      dialect: config.engineApi,
    })
    : null;
  if (scripted) env.ENGINE_URL = scripted.url;

  let stopping = false;
  const ready = new Map<number, string>();
  const allReady = Promise.withResolvers<void>();
  const finished = Promise.withResolvers<number>();
  const workers: Worker[] = [];

  const spawn = (index: number): Deno.ChildProcess => {
    const child = new Deno.Command(Deno.execPath(), {
      // SO_REUSEPORT is behind --unstable-net in Deno 2.
      args: [
        "run",
        "--allow-all",
        "--unstable-net",
        new URL(Deno.mainModule).pathname,
        "--worker",
        String(index),
      ],
      // One rollout worker, on worker 0, so ROLLOUT_CONCURRENCY stays the machine's.
      env: { ...env, ...(index > 0 ? { ROLLOUT_WORKER: "false" } : {}) },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    forward(child.stdout, Deno.stdout, `[w${index}] `, (line) => {
      const match = line.match(WORKER_READY);
      if (!match || Number(match[1]) !== index) return;
      ready.set(index, match[2]);
      if (ready.size === config.workers) allReady.resolve();
    });
    forward(child.stderr, Deno.stderr, `[w${index}] `);
    return child;
  };

  // A worker that dies after it listened is started again; one that dies before it ever
  // listened hit a start-up problem that would only repeat, so every worker is stopped.
  const watch = (worker: Worker) => {
    worker.child.status.then(async (status) => {
      const listened = ready.delete(worker.index);
      if (stopping) return;
      const how = status.signal ?? `code ${status.code}`;
      if (!listened) {
        console.error(`Worker ${worker.index} exited (${how}) before it listened: stopping`);
        await stop();
        finished.resolve(1);
        return;
      }
      console.error(`Worker ${worker.index} exited (${how}); restarting it`);
      await sleep(RESTART_DELAY_MS);
      if (stopping) return;
      worker.child = spawn(worker.index);
      watch(worker);
    });
  };

  const stop = async () => {
    if (stopping) return;
    stopping = true;
    for (const worker of workers) {
      try {
        worker.child.kill("SIGTERM");
      } catch {
        // Already gone.
      }
    }
    await Promise.all(workers.map((worker) => worker.child.status));
    await scripted?.close();
  };

  for (let index = 0; index < config.workers; index++) {
    const worker = { index, child: spawn(index) };
    workers.push(worker);
    watch(worker);
  }
  const onSignal = async () => {
    console.log(`Shutting down: stopping ${config.workers} workers`);
    await stop();
    finished.resolve(0);
  };
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);

  allReady.promise.then(() => {
    const { words } = listeningOn(config.host, port);
    const pids = [...ready.entries()].sort(([a], [b]) => a - b).map(([, pid]) => pid);
    console.log([
      ...(scripted ? SCRIPTED_WARNING : []),
      `Rollout Gateway listening on ${words} with ${config.workers} workers (pids ${
        pids.join(", ")
      }; worker 0's banner has the details)`,
    ].join("\n"));
  });
  const code = await finished.promise;
  Deno.removeSignalListener("SIGINT", onSignal);
  Deno.removeSignalListener("SIGTERM", onSignal);
  return code;
}

/**
 * Stops the worker gracefully when its supervisor goes: its stdin pipe ends, whether the
 * supervisor exited or was killed.
 */
export function stopWhenOrphaned(stop: () => void): void {
  (async () => {
    try {
      for await (const _ of Deno.stdin.readable) {
        // The supervisor writes nothing; only the end matters.
      }
    } catch {
      // A broken pipe means the same.
    }
    stop();
  })();
}

/** A port free now on `host`, for the workers to share. */
function freePort(host: string): number {
  const listener = Deno.listen({ hostname: host, port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** Copies a worker's output line by line, prefixed with its name, telling `onLine` each line. */
async function forward(
  from: ReadableStream<Uint8Array>,
  to: { write(bytes: Uint8Array): Promise<number> },
  prefix: string,
  onLine: (line: string) => void = () => {},
): Promise<void> {
  const encoder = new TextEncoder();
  let rest = "";
  try {
    for await (const text of from.pipeThrough(new TextDecoderStream())) {
      const lines = (rest + text).split("\n");
      rest = lines.pop()!;
      for (const line of lines) {
        onLine(line);
        await writeAll(to, encoder.encode(`${prefix}${line}\n`));
      }
    }
    if (rest) await writeAll(to, encoder.encode(`${prefix}${rest}\n`));
  } catch {
    // The worker is gone; its status says how.
  }
}

async function writeAll(
  to: { write(bytes: Uint8Array): Promise<number> },
  bytes: Uint8Array,
): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await to.write(bytes.subarray(at));
}
