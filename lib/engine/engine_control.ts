/**
 * The engine calls a trainer makes around a weight update, sent to every engine worker at once:
 * pause generation, continue it, set and read the weight version. SGLang's routers do not
 * forward these (reference sglang.md §3: slime calls each engine directly), so the workers are
 * the configured list, else the router's own list (`GET /workers`, or the legacy
 * `GET /list_workers`), else the engine URL itself, which is then one worker.
 *
 * @module
 */
import {
  EngineControlError,
  type EngineController,
  type EngineControlOptions,
  type PauseMode,
  type WorkerAnswer,
} from "./engine.ts";

/** Most bytes of a worker's answer kept, so a misbehaving worker cannot grow a reply. */
const ANSWER_BYTES = 4096;

/**
 * Pause, continue and weight versions across the engine's workers.
 *
 * @example
 * ```ts
 * import { startScriptedEngine } from "../scripted_engine/mod.ts";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer } from "../tokenizer/mod.ts";
 * import { EngineControl } from "./engine_control.ts";
 * // The built-in scripted engine stands in for an SGLang router.
 * const engine = await startScriptedEngine({
 *   tokenizer: await loadTokenizer(defaultTokenizerPath()),
 * });
 * const control = new EngineControl(engine.url, { workers: null, timeoutMs: 60_000 });
 * await control.pause("retract");
 * await control.setWeightVersion("7", false);
 * await control.continue();
 * await engine.close();
 * ```
 */
/** One control call to every worker: its path, and its JSON body when it has one. */
export interface ControlCall {
  readonly path: string;
  readonly body?: unknown;
}

/** A dialect's control calls: what each control sends to every worker. */
export interface ControlCalls {
  pause(mode: PauseMode): ControlCall;
  readonly continue: ControlCall;
  /** Sent in order; the last one's answers are the result. */
  setWeightVersion(version: string, abortAll: boolean): readonly ControlCall[];
  /** The `GET` path of a worker's `{weight_version}`. */
  readonly versionPath: string;
}

/**
 * SGLang's: `/pause_generation {mode}`, `/continue_generation`, `/update_weight_version
 * {new_version, abort_all_requests}` (the abort aborts running requests, which the gateway
 * resumes), `GET /get_weight_version`.
 */
export const SGLANG_CONTROL: ControlCalls = {
  pause: (mode) => ({ path: "/pause_generation", body: { mode } }),
  continue: { path: "/continue_generation", body: {} },
  setWeightVersion: (version, abortAll) => [{
    path: "/update_weight_version",
    body: { new_version: version, abort_all_requests: abortAll },
  }],
  versionPath: "/get_weight_version",
};

/** Pause, continue and weight versions across an engine's workers, in its dialect's calls. */
export class EngineControl implements EngineController {
  readonly #workers: EngineWorkers;

  constructor(
    readonly engineUrl: string,
    options: EngineControlOptions,
    readonly calls: ControlCalls = SGLANG_CONTROL,
  ) {
    this.#workers = new EngineWorkers(engineUrl, options);
  }

  /** The worker URLs calls go to. */
  workers(): Promise<string[]> {
    return this.#workers.list();
  }

  pause(mode: PauseMode): Promise<WorkerAnswer[]> {
    return this.#send(this.calls.pause(mode));
  }

  continue(): Promise<WorkerAnswer[]> {
    return this.#send(this.calls.continue);
  }

  /**
   * Names the weights every worker serves from now on: later tokens carry `version`. `abortAll`
   * also aborts running requests (which the gateway resumes).
   */
  async setWeightVersion(version: string, abortAll: boolean): Promise<WorkerAnswer[]> {
    let answers: WorkerAnswer[] = [];
    for (const call of this.calls.setWeightVersion(version, abortAll)) {
      answers = await this.#send(call);
    }
    return answers;
  }

  /** Each worker's current weight version. */
  weightVersions(): Promise<{ url: string; version: string }[]> {
    return this.#workers.versions(this.calls.versionPath);
  }

  #send(call: ControlCall): Promise<WorkerAnswer[]> {
    return this.#workers.fanOut("POST", call.path, call.body);
  }
}

/**
 * An engine's workers as control calls reach them, whatever the dialect: the configured list, a
 * router's own list, or the engine URL as the one worker; every call sent to all at once.
 */
export class EngineWorkers {
  constructor(readonly engineUrl: string, private readonly options: EngineControlOptions) {}

  /** The worker URLs calls go to. */
  async list(): Promise<string[]> {
    if (this.options.workers) return [...this.options.workers];
    const listed = await this.#routerWorkers();
    return listed ?? [this.engineUrl];
  }

  /** Each worker's `weight_version`, read with `GET path`. */
  async versions(path: string): Promise<{ url: string; version: string }[]> {
    const answers = await this.fanOut("GET", path);
    return answers.map(({ url, body }) => {
      const version = (body as { weight_version?: unknown } | null)?.weight_version;
      if (typeof version !== "string") {
        throw new EngineControlError([{ url, error: "no weight_version in its answer" }], answers);
      }
      return { url, version };
    });
  }

  /** Calls every worker at once; fails, after all have answered, if any did not accept. */
  async fanOut(method: "GET" | "POST", path: string, body?: unknown): Promise<WorkerAnswer[]> {
    const workers = await this.list();
    const results = await Promise.all(workers.map(async (url) => {
      try {
        const response = await fetch(`${url}${path}`, {
          method,
          headers: body === undefined ? {} : { "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.options.timeoutMs),
        });
        const text = (await response.text()).slice(0, ANSWER_BYTES);
        const answer = { url, body: parsed(text) };
        if (!response.ok) return { answer, error: `HTTP ${response.status} ${text}`.trim() };
        const success = (answer.body as { success?: unknown } | null)?.success;
        if (success === false) return { answer, error: text };
        return { answer, error: null };
      } catch (error) {
        return { answer: { url, body: null }, error: (error as Error).message };
      }
    }));
    const answers = results.map((result) => result.answer);
    const failures = results.flatMap((result) =>
      result.error === null ? [] : [{ url: result.answer.url, error: result.error }]
    );
    if (failures.length > 0) throw new EngineControlError(failures, answers);
    return answers;
  }

  /** The router's workers, or `null` when the engine URL is not a router that lists them. */
  async #routerWorkers(): Promise<string[] | null> {
    for (const path of ["/workers", "/list_workers"]) {
      try {
        const response = await fetch(`${this.engineUrl}${path}`, {
          signal: AbortSignal.timeout(this.options.timeoutMs),
        });
        const body = response.ok ? parsed(await response.text()) : await response.body?.cancel();
        const urls = workerUrls(body);
        if (urls) return urls;
      } catch {
        // Not a router, or not reachable: the pause itself says which.
      }
    }
    return null;
  }
}

/** The URLs of SMG's `{workers: [{url}]}` or the legacy router's `{urls: []}`. */
function workerUrls(body: unknown): string[] | null {
  if (typeof body !== "object" || body === null) return null;
  const { workers, urls } = body as { workers?: unknown; urls?: unknown };
  const list = Array.isArray(workers)
    ? workers.map((worker) => (worker as { url?: unknown } | null)?.url)
    : Array.isArray(urls)
    ? urls
    : null;
  if (!list || list.length === 0) return null;
  if (!list.every((url): url is string => typeof url === "string" && /^https?:\/\//.test(url))) {
    return null;
  }
  return list.map((url) => url.replace(/\/+$/, ""));
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
