/**
 * Client of SGLang's native `POST /generate` with token ids in and token ids out
 * (reference sglang.md §1, §6): pooled connections with a per-origin cap, a fixed-length `rid`
 * per call, streamed (`stream: true`) when the caller wants tokens as they are sampled,
 * `/abort_request` when the caller gives up, and engine-side aborts (a weight update pausing the
 * engine) resumed by resubmitting prompt + partial output.
 *
 * @module
 */
import type { GatewayMetrics } from "../metrics/mod.ts";
import { Agent, request } from "undici";
import {
  type Engine,
  type EngineClientOptions,
  EngineRejectedError,
  EngineUnavailableError,
  type GenerateRequest,
  type Generation,
} from "./engine.ts";
import {
  type CallEnd,
  type GeneratedSoFar,
  generateResuming,
  type SampledChunk,
} from "./generation.ts";
import type { PromptIds } from "./prompt_ids.ts";
import { engineErrorMessage, requestBody } from "./request_body.ts";
import {
  ChunkReader,
  type NewTokens,
  newTokens,
  type RawOutput,
  sseData,
  StreamFormatError,
} from "./stream_chunks.ts";

/**
 * The SGLang engine client.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startScriptedEngine } from "../scripted_engine/mod.ts";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer } from "../template/mod.ts";
 * import { samplingParams } from "./sampling.ts";
 * import { SglangClient } from "./sglang_client.ts";
 * const tokenizer = await loadTokenizer(defaultTokenizerPath());
 * // The built-in scripted engine stands in for SGLang.
 * const scripted = await startScriptedEngine({ tokenizer });
 * const engine = new SglangClient(scripted.url, { connections: 64, timeoutMs: 600_000 });
 * const inputIds = tokenizer.encode("Hello");
 * const sampling = samplingParams({ maxTokens: 16 }, {
 *   promptLength: inputIds.length,
 *   contextLength: 4096,
 *   stopIds: [],
 * });
 * const generation = await engine.generate({ inputIds, sampling });
 * assert.ok(generation.outputIds.length <= 16);
 * await engine.close();
 * await scripted.close();
 * ```
 */
export class SglangClient implements Engine {
  readonly #agent: Agent;
  readonly #options: Required<Omit<EngineClientOptions, "metrics" | "endpoint" | "cacheSalt">>;
  readonly #metrics: GatewayMetrics | undefined;

  constructor(readonly url: string, options: EngineClientOptions) {
    this.#options = { maxResumes: 16, ...options };
    this.#metrics = options.metrics;
    this.#agent = new Agent({
      connections: options.connections,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
    });
  }

  generate(req: GenerateRequest): Promise<Generation> {
    return generateResuming(
      req,
      req.sampling.max_new_tokens,
      { maxResumes: this.#options.maxResumes, metrics: this.#metrics },
      (rid, inputIds, maxNew, output) => this.#call(rid, req, inputIds, maxNew, output),
    );
  }

  /**
   * One `/generate` call for `inputIds` (the prompt, plus partial output when resuming): its
   * tokens go into `output` (as they stream, when the caller wants them so); resolves to how the
   * call ended.
   */
  async #call(
    rid: string,
    req: GenerateRequest,
    inputIds: PromptIds,
    maxNew: number,
    output: GeneratedSoFar,
  ): Promise<CallEnd> {
    req.signal?.throwIfAborted();
    const stream = req.onTokens !== undefined;
    const sampling = JSON.stringify({ ...req.sampling, max_new_tokens: maxNew });
    const parts: [Uint8Array, Uint8Array, Uint8Array] = [
      encoder.encode(`{"rid":"${rid}","input_ids":[`),
      inputIds.ascii(),
      encoder.encode(
        `],"sampling_params":${sampling},"return_logprob":true,${
          req.topLogprobs ? `"top_logprobs_num":${req.topLogprobs},` : ""
        }"stream":${stream}}`,
      ),
    ];
    const { body, length } = requestBody(parts);
    const timeout = AbortSignal.timeout(this.#options.timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const onAbort = () => void this.#abort(rid);
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      const response = await request(`${this.url}/generate`, {
        method: "POST",
        headers: { "content-type": "application/json", "content-length": String(length) },
        body,
        dispatcher: this.#agent,
        signal,
      });
      if (response.statusCode >= 400) {
        const text = await response.body.text();
        if (response.statusCode >= 500 || response.statusCode === 429) {
          throw new EngineUnavailableError(
            `Engine answered HTTP ${response.statusCode}: ${text.slice(0, 300)}`,
          );
        }
        throw new EngineRejectedError(`Engine rejected the request: ${engineErrorMessage(text)}`);
      }
      if (!stream) {
        const answer = JSON.parse(await response.body.text()) as RawOutput;
        const meta = answer.meta_info;
        output.addSpanned(sampled(newTokens(answer)), meta?.weight_versions, meta?.weight_version);
        return callEnd(answer);
      }
      const chunks = new ChunkReader();
      let final: RawOutput | null = null;
      // Read to the body's end (past `[DONE]`), so the connection goes back to the pool.
      for await (const data of sseData(response.body)) {
        if (data === "[DONE]" || final) continue;
        const chunk = JSON.parse(data) as RawOutput;
        if (chunk.error) {
          throw new EngineRejectedError(
            `Engine failed the request: ${String(chunk.error.message ?? "").slice(0, 500)}`,
          );
        }
        output.add(sampled(chunks.next(chunk)), chunk.meta_info?.weight_version);
        if (chunk.meta_info?.finish_reason) final = chunk;
      }
      if (final) return callEnd(final);
      throw new EngineUnavailableError("Engine stream ended before the generation finished");
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
      if (error instanceof StreamFormatError) throw new EngineRejectedError(error.message);
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

/** How the answer (or last chunk) `final` says the call ended. */
function callEnd(final: RawOutput): CallEnd {
  const reportedMs = (final.meta_info?.e2e_latency ?? 0) * 1000;
  const finish = final.meta_info?.finish_reason;
  if (finish?.type === "abort") return { aborted: finish.message ?? "Aborted", reportedMs };
  return {
    finish: finish?.type === "length"
      ? { type: "length" }
      : { type: "stop", matched: finish?.matched ?? null },
    reportedMs,
  };
}

/** SGLang's `[logprob, id, text]` triples as the dialect-neutral chunk. */
function sampled(tokens: NewTokens): SampledChunk {
  return {
    ids: tokens.ids,
    logprobs: tokens.logprobs.map((logprob) => logprob[0]),
    tops: tokens.tops.map((top) => (top ?? []).map(([logprob, id]) => [id, logprob] as const)),
  };
}
