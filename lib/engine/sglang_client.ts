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
import {
  type Engine,
  type EngineClientOptions,
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
import { engineChunks, EngineHttp, routingHeaders } from "./engine_http.ts";
import { ChunkReader, type NewTokens, newTokens, type RawOutput } from "./stream_chunks.ts";

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
  readonly #http: EngineHttp;
  readonly #maxResumes: number;
  readonly #metrics: GatewayMetrics | undefined;
  readonly #routingKeys: boolean;
  readonly #saltByVersion: boolean;
  /** The weight version last set through the gateway: the cache namespace when salted. */
  #version = "default";

  constructor(readonly url: string, options: EngineClientOptions) {
    this.#http = new EngineHttp(url, options.timeoutMs, options.connections);
    this.#maxResumes = options.maxResumes ?? 16;
    this.#metrics = options.metrics;
    this.#routingKeys = options.routingKeys ?? false;
    this.#saltByVersion = options.cacheSalt === "weight_version";
  }

  versionSet(version: string): string {
    const previous = this.#version;
    this.#version = version;
    return previous;
  }

  generate(req: GenerateRequest): Promise<Generation> {
    return generateResuming(
      req,
      req.sampling.max_new_tokens,
      { maxResumes: this.#maxResumes, metrics: this.#metrics },
      (rid, inputIds, maxNew, output) => this.#call(rid, req, inputIds, maxNew, output),
    );
  }

  /**
   * One `/generate` call for `inputIds` (the prompt, plus partial output when resuming): its
   * tokens go into `output` (as they stream, when the caller wants them so); resolves to how the
   * call ended.
   */
  #call(
    rid: string,
    req: GenerateRequest,
    inputIds: PromptIds,
    maxNew: number,
    output: GeneratedSoFar,
  ): Promise<CallEnd> {
    const stream = req.onTokens !== undefined;
    const sampling = JSON.stringify({ ...req.sampling, max_new_tokens: maxNew });
    const parts: [Uint8Array, Uint8Array, Uint8Array] = [
      encoder.encode(`{"rid":"${rid}","input_ids":[`),
      inputIds.ascii(),
      encoder.encode(
        `],"sampling_params":${sampling},"return_logprob":true,${
          req.topLogprobs ? `"top_logprobs_num":${req.topLogprobs},` : ""
        }${
          this.#saltByVersion ? `"cache_salt":${JSON.stringify(this.#version)},` : ""
        }"stream":${stream}}`,
      ),
    ];
    // Routers have no `/abort_request`; the dropped connection aborts there.
    const onAbort = () => void this.#http.tell("/abort_request", { rid, abort_all: false });
    return this.#http.post(
      "/generate",
      parts,
      req.signal,
      onAbort,
      async (body) => {
        if (!stream) {
          const answer = JSON.parse(await body.text()) as RawOutput;
          const meta = answer.meta_info;
          output.addSpanned(
            sampled(newTokens(answer)),
            meta?.weight_versions,
            meta?.weight_version,
          );
          return callEnd(answer);
        }
        const chunks = new ChunkReader();
        let final: RawOutput | null = null;
        for await (const chunk of engineChunks<RawOutput>(body)) {
          if (final) continue;
          output.add(sampled(chunks.next(chunk)), chunk.meta_info?.weight_version);
          if (chunk.meta_info?.finish_reason) final = chunk;
        }
        if (final) return callEnd(final);
        throw new EngineUnavailableError("Engine stream ended before the generation finished");
      },
      undefined,
      routingHeaders(this.#routingKeys, SGLANG_ROUTING_HEADER, req.routingKey),
    );
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

const encoder = new TextEncoder();

/**
 * The header SGLang's model gateway places a request by (`consistent_hashing`, `manual`
 * policies: sgl-model-gateway's `policies/consistent_hashing.rs`, `manual.rs`).
 */
export const SGLANG_ROUTING_HEADER = "x-smg-routing-key";

/** How the answer (or last chunk) `final` says the call ended. */
function callEnd(final: RawOutput): CallEnd {
  const reportedMs = (final.meta_info?.e2e_latency ?? 0) * 1000;
  const cached = final.meta_info?.cached_tokens;
  const facts = { reportedMs, ...(typeof cached === "number" ? { cachedTokens: cached } : {}) };
  const finish = final.meta_info?.finish_reason;
  if (finish?.type === "abort") return { aborted: finish.message ?? "Aborted", ...facts };
  return {
    finish: finish?.type === "length"
      ? { type: "length" }
      : { type: "stop", matched: finish?.matched ?? null },
    ...facts,
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
