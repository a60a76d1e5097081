/**
 * Client of SGLang's native `POST /generate` with token ids in and token ids out
 * (reference sglang.md §1, §6): pooled connections with a per-origin cap, a fixed-length `rid`
 * per call, `/abort_request` when the caller gives up, and engine-side aborts (a weight update
 * pausing the engine) resumed by resubmitting prompt + partial output.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import { Buffer } from "node:buffer";
import { Agent, request } from "undici";
import { PromptIds } from "./prompt_ids.ts";
import type { SamplingParams } from "./sampling.ts";

/** Why the engine stopped. `matched` is the stop token id or the stop string. */
export type EngineFinish =
  | { readonly type: "stop"; readonly matched: number | string | null }
  | { readonly type: "length" };

/** One finished generation. `outputIds`, `logprobs` are aligned and equally long. */
export interface Generation {
  /** Request id of the first engine call of this generation. */
  readonly rid: string;
  readonly outputIds: number[];
  /** Log-probability of each output token under the sampling policy. */
  readonly logprobs: number[];
  /** At each output position, the most likely tokens `[id, logprob]`, when asked for. */
  readonly topLogprobs?: [number, number][][];
  readonly finish: EngineFinish;
  /** Weight version of every engine call that produced tokens, in order. */
  readonly weightVersions: string[];
  /** Engine-side aborts that were resumed. */
  readonly aborts: number;
  /** Wall time spent waiting on the engine, in milliseconds. */
  readonly engineMs: number;
  /** The engine's own account of its time (`meta_info.e2e_latency`), in milliseconds. */
  readonly engineReportedMs: number;
}

/** One generation request. */
export interface GenerateRequest {
  /** Request id of the first engine call (later calls, after engine-side aborts, get new ones). */
  readonly rid?: string;
  /** The prompt; pass {@linkcode PromptIds} to send a long history without formatting it again. */
  readonly inputIds: ArrayLike<number> | PromptIds;
  readonly sampling: SamplingParams;
  /** How many most likely tokens to return at each output position (`top_logprobs_num`). */
  readonly topLogprobs?: number;
  /** Aborted when the client leaves: the engine request is aborted and nothing is returned. */
  readonly signal?: AbortSignal;
}

/** Something that turns prompt token ids into sampled token ids. */
export interface Engine {
  /** Base URL of the engine. */
  readonly url: string;
  generate(request: GenerateRequest): Promise<Generation>;
  close(): Promise<void>;
}

/** The engine cannot take the request now (down, overloaded, timing out); retry later. */
export class EngineUnavailableError extends Error implements CodedError {
  readonly code = "engine_unavailable" as const;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "EngineUnavailableError";
  }
}

/** The engine refused the request itself (HTTP 4xx): retrying the same request cannot help. */
export class EngineRejectedError extends Error implements CodedError {
  readonly code = "engine_rejected" as const;
  constructor(message: string) {
    super(message);
    this.name = "EngineRejectedError";
  }
}

/** Options of {@linkcode SglangClient}. */
export interface SglangClientOptions {
  /** Most open connections to the engine's origin. */
  readonly connections: number;
  /** Longest one engine call may take, in milliseconds. */
  readonly timeoutMs: number;
  /** Most engine-side aborts resumed within one generation. */
  readonly maxResumes?: number;
}

/** A fixed-length request id (32 hex digits), so SGLang's prefix-matching abort hits one call. */
export function newRid(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

interface RawOutput {
  output_ids?: number[];
  meta_info?: {
    finish_reason?: { type: string; matched?: number | string | null; message?: string } | null;
    output_token_logprobs?: [number, number, unknown][];
    output_top_logprobs?: ([number, number, unknown][] | null)[];
    weight_version?: string;
    e2e_latency?: number;
  };
}

/**
 * The SGLang engine client.
 *
 * @example
 * ```ts
 * const engine = new SglangClient("http://127.0.0.1:30000", { connections: 64, timeoutMs: 600_000 });
 * const generation = await engine.generate({ inputIds, sampling });
 * ```
 */
export class SglangClient implements Engine {
  readonly #agent: Agent;
  readonly #options: Required<SglangClientOptions>;

  constructor(readonly url: string, options: SglangClientOptions) {
    this.#options = { maxResumes: 16, ...options };
    this.#agent = new Agent({
      connections: options.connections,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  async generate(req: GenerateRequest): Promise<Generation> {
    const started = performance.now();
    const outputIds: number[] = [];
    const logprobs: number[] = [];
    const topLogprobs: [number, number][][] = [];
    const weightVersions: string[] = [];
    let aborts = 0;
    let reportedMs = 0;
    const firstRid = req.rid ?? newRid();
    const prompt = req.inputIds instanceof PromptIds ? req.inputIds : PromptIds.from(req.inputIds);
    for (;;) {
      const rid = aborts === 0 ? firstRid : newRid();
      const maxNew = req.sampling.max_new_tokens - outputIds.length;
      const raw = await this.#call(rid, req, prompt.concat(outputIds), maxNew);
      const ids = raw.output_ids ?? [];
      reportedMs += (raw.meta_info?.e2e_latency ?? 0) * 1000;
      const lps = raw.meta_info?.output_token_logprobs ?? [];
      if (lps.length !== ids.length || lps.some((lp, i) => lp[1] !== ids[i])) {
        throw new EngineRejectedError(
          "Engine returned output_token_logprobs that do not match output_ids",
        );
      }
      for (let i = 0; i < ids.length; i++) {
        outputIds.push(ids[i]);
        logprobs.push(lps[i][0]);
      }
      if (req.topLogprobs) {
        const tops = raw.meta_info?.output_top_logprobs ?? [];
        for (let i = 0; i < ids.length; i++) {
          topLogprobs.push((tops[i] ?? []).map(([logprob, id]) => [id, logprob]));
        }
      }
      if (ids.length > 0) weightVersions.push(raw.meta_info?.weight_version ?? "default");
      const finish = raw.meta_info?.finish_reason;
      if (finish?.type === "abort") {
        req.signal?.throwIfAborted();
        if (aborts >= this.#options.maxResumes || outputIds.length >= req.sampling.max_new_tokens) {
          throw new EngineUnavailableError(
            `Engine aborted the generation ${aborts + 1} times: ${finish.message ?? "Aborted"}`,
          );
        }
        aborts++;
        continue;
      }
      const engineFinish: EngineFinish = finish?.type === "length"
        ? { type: "length" }
        : { type: "stop", matched: finish?.matched ?? null };
      return {
        rid: firstRid,
        outputIds,
        logprobs,
        ...(req.topLogprobs ? { topLogprobs } : {}),
        finish: engineFinish,
        weightVersions,
        aborts,
        engineMs: performance.now() - started,
        engineReportedMs: reportedMs,
      };
    }
  }

  /** One `/generate` call for `inputIds` (the prompt, plus partial output when resuming). */
  async #call(
    rid: string,
    req: GenerateRequest,
    inputIds: PromptIds,
    maxNew: number,
  ): Promise<RawOutput> {
    req.signal?.throwIfAborted();
    const sampling = JSON.stringify({ ...req.sampling, max_new_tokens: maxNew });
    const body = Buffer.concat([
      encoder.encode(`{"rid":"${rid}","input_ids":[`),
      inputIds.ascii(),
      encoder.encode(
        `],"sampling_params":${sampling},"return_logprob":true,${
          req.topLogprobs ? `"top_logprobs_num":${req.topLogprobs},` : ""
        }"stream":false}`,
      ),
    ]);
    const timeout = AbortSignal.timeout(this.#options.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const onAbort = () => void this.#abort(rid);
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const response = await request(`${this.url}/generate`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        dispatcher: this.#agent,
        signal,
      });
      const text = await response.body.text();
      if (response.statusCode >= 500 || response.statusCode === 429) {
        throw new EngineUnavailableError(
          `Engine answered HTTP ${response.statusCode}: ${text.slice(0, 300)}`,
        );
      }
      if (response.statusCode >= 400) {
        throw new EngineRejectedError(`Engine rejected the request: ${errorMessage(text)}`);
      }
      return JSON.parse(text) as RawOutput;
    } catch (error) {
      if (req.signal?.aborted) throw req.signal.reason;
      if (timeout.aborted) {
        throw new EngineUnavailableError(
          `Engine did not answer within ${this.#options.timeoutMs} ms`,
        );
      }
      if (error instanceof EngineRejectedError || error instanceof EngineUnavailableError) {
        throw error;
      }
      throw new EngineUnavailableError(`Engine at ${this.url} is unreachable: ${String(error)}`, {
        cause: error,
      });
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Best effort: routers have no `/abort_request`, and closing the connection aborts too. */
  async #abort(rid: string): Promise<void> {
    try {
      const response = await request(`${this.url}/abort_request`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ rid, abort_all: false }),
        dispatcher: this.#agent,
      });
      await response.body.dump();
    } catch {
      // the engine may be gone; the dropped connection is the abort then
    }
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }
}

const encoder = new TextEncoder();

function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text);
    return String(body?.error?.message ?? body?.message ?? text).slice(0, 500);
  } catch {
    return text.slice(0, 500);
  }
}
