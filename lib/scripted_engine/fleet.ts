/**
 * Scripted engine workers started together, as an engine fleet behind a gateway: each its own
 * server, prefix cache and sessions, each able to die and come back on its own.
 *
 * @module
 */
import { startScriptedEngine } from "./scripted_engine.ts";
import type { ScriptedEngine, ScriptedEngineOptions } from "./types.ts";

/** Running scripted workers. */
export interface ScriptedFleet {
  readonly workers: readonly ScriptedEngine[];
  /** Their URLs, in order. */
  readonly urls: readonly string[];
  /** The worker at `url`. */
  worker(url: string): ScriptedEngine | undefined;
  close(): Promise<void>;
}

/**
 * Starts `count` scripted workers with the same `options` (a `port` is ignored; each has a
 * `routeSalt` of its own).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer } from "../tokenizer/mod.ts";
 * import { startScriptedFleet } from "./fleet.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * const fleet = await startScriptedFleet(3, { tokenizer });
 * assert.equal(new Set(fleet.urls).size, 3);
 * await fleet.workers[1].kill(); // its port now refuses connections
 * fleet.workers[1].revive(); // back, with nothing cached
 * await fleet.close();
 * ```
 */
export async function startScriptedFleet(
  count: number,
  options: ScriptedEngineOptions,
): Promise<ScriptedFleet> {
  const workers = await Promise.all(
    // Each worker computes routes as a machine of its own (R3: a recompute elsewhere differs).
    Array.from(
      { length: count },
      (_, i) => startScriptedEngine({ ...options, port: 0, routeSalt: `worker${i}` }),
    ),
  );
  const urls = workers.map((worker) => worker.url);
  return {
    workers,
    urls,
    worker: (url) => workers.find((worker) => worker.url === url),
    close: async () => void await Promise.all(workers.map((worker) => worker.close())),
  };
}
