/**
 * Client of vLLM's token-in/token-out `POST /inference/v1/generate` (vLLM ≥ 0.20; its
 * `vllm/entrypoints/scale_out/token_in_token_out/protocol.py`; docs/engines.md): token ids
 * in, `choices[0].token_ids` and their logprobs out, streamed as SSE deltas when the caller wants
 * tokens as they are sampled. A client that leaves closes the connection (vLLM aborts a request
 * whose client disconnects) and is also named to `/abort_requests` where the server has it; an
 * engine-side abort (`finish_reason: "abort"`, a `/pause?mode=abort`) is resumed by resubmitting
 * prompt + partial output, as on SGLang.
 *
 * @module
 */
import type { GatewayMetrics } from "../metrics/mod.ts";
import {
  type Engine,
  type EngineClientOptions,
  type EngineFinish,
  EngineRejectedError,
  EngineUnavailableError,
  type GenerateRequest,
  type Generation,
  type VersionSpan,
} from "./engine.ts";
import {
  type CallEnd,
  type GeneratedSoFar,
  generateResuming,
  type SampledChunk,
  withRoutes,
} from "./generation.ts";
import type { PromptIds } from "./prompt_ids.ts";
import { engineChunks, EngineHttp, routingHeaders } from "./engine_http.ts";
import type { TransportBody } from "./http_worker.ts";
import { fieldRoutes } from "./routes_reading.ts";
import type { SamplingParams } from "./sampling.ts";
import { StreamFormatError } from "./stream_chunks.ts";
import {
  decodeNpyRoutes,
  expertDtype,
  type ExpertRows,
  fromBase64,
  type MoeShape,
  nestedRoutes,
} from "./routed_experts.ts";

/** vLLM's name for the weights of a server whose version was never set. */
export const VLLM_DEFAULT_VERSION = "default";

/**
 * The header vLLM's router hashes a request by, first of those it reads (its
 * `src/policies/hash_key.rs`; production-stack's session router is configured with it too).
 */
export const VLLM_ROUTING_HEADER = "x-session-id";

/** The prefix vLLM gives a `/inference/v1/generate` request's id inside the engine. */
const INTERNAL_ID_PREFIX = "generate-tokens-";

/** One choice of an answer or a stream chunk, as far as the gateway reads it. */
interface VllmChoice {
  token_ids?: number[];
  finish_reason?: string | null;
  /** The matched stop token id or string (servers that send it). */
  stop_reason?: number | string | null;
  logprobs?: {
    /** `/inference/v1/generate`'s: one entry per token. */
    content?: {
      token_id: number;
      logprob: number;
      top_logprobs?: { token_id: number; logprob: number }[];
    }[];
    /** `/v1/completions`' (with `return_tokens_as_token_ids`): `token_id:N` names. */
    tokens?: string[];
    token_logprobs?: (number | null)[];
    top_logprobs?: (Record<string, number> | null)[] | null;
  } | null;
  /** Output spans sampled under each weight version (the final chunk's cover the whole output). */
  weight_versions?: VersionSpan[] | null;
  /**
   * The routed experts (R3, `--enable-return-routed-experts`): base64 of a `.npy` of every row,
   * `(prompt + output - 1, layers, top_k)`; from older servers, the output's rows but the last as
   * nested lists, the prompt's in the answer's `prompt_routed_experts`. On the answer or the last
   * chunk; `null` for a call aborted before its first forward.
   */
  routed_experts?: string | number[][][] | null;
}

/** An answer, or one chunk of a streamed one. */
interface VllmAnswer {
  choices?: VllmChoice[];
  /** Token counts: on the answer, or a stream's last chunk (`stream_options.include_usage`). */
  usage?: { prompt_tokens_details?: { cached_tokens?: number } | null } | null;
  /** Older servers: the prompt's routed experts, one row a prompt token, as nested lists. */
  prompt_routed_experts?: number[][][] | null;
  error?: { message?: string };
}

/** The vLLM engine client. */
export class VllmClient implements Engine {
  readonly #http: EngineHttp;
  readonly #maxResumes: number;
  readonly #metrics: GatewayMetrics | undefined;
  /**
   * The weight version tokens are labelled with when the server reports no spans: the one the
   * trainer last set through the gateway ({@linkcode VllmClient.versionSet}), else vLLM's default.
   */
  assumedVersion = VLLM_DEFAULT_VERSION;
  /**
   * The endpoint calls go to: `generate` (`/inference/v1/generate`), `completions`
   * (`/v1/completions`, servers older than 0.20), or `auto`: `generate` until the server answers
   * 404 there, then `completions` from then on.
   */
  #endpoint: VllmEndpoint;
  /** Each request's `cache_salt` is the version it is sampled under (`CACHE_SALT=weight_version`). */
  readonly #saltByVersion: boolean;
  readonly #routingKeys: boolean;
  /** The model's MoE shape, to read routed experts with (`ROUTED_EXPERTS`). */
  readonly #moe: MoeShape | null;

  constructor(readonly url: string, options: EngineClientOptions) {
    this.#http = new EngineHttp(url, options.timeoutMs, options.connections, options.httpWorker);
    this.#maxResumes = options.maxResumes ?? 16;
    this.#metrics = options.metrics;
    this.#endpoint = parseEndpoint(options.endpoint);
    this.#saltByVersion = options.cacheSalt === "weight_version";
    this.#routingKeys = options.routingKeys ?? false;
    this.#moe = options.moe ?? null;
  }

  generate(req: GenerateRequest): Promise<Generation> {
    return generateResuming(
      req,
      req.sampling.max_new_tokens,
      { maxResumes: this.#maxResumes, metrics: this.#metrics },
      (rid, inputIds, maxNew, output) => this.#call(rid, req, inputIds, maxNew, output),
    );
  }

  delivered(): Promise<void> {
    return this.#http.delivered();
  }

  versionSet(version: string): string {
    const previous = this.assumedVersion;
    this.assumedVersion = version;
    return previous;
  }

  /** The endpoint calls go to now. */
  get endpoint(): VllmEndpoint {
    return this.#endpoint;
  }

  /**
   * One call at the endpoint in use; its tokens go into `output`; resolves to how it ended. With
   * `auto`, a 404 at `/inference/v1/generate` (a server older than 0.20) moves every later call
   * to `/v1/completions`, this one first.
   */
  async #call(
    rid: string,
    req: GenerateRequest,
    inputIds: PromptIds,
    maxNew: number,
    output: GeneratedSoFar,
  ): Promise<CallEnd> {
    const wire = this.#endpoint === "completions" ? COMPLETIONS : GENERATE;
    try {
      return await this.#callAt(wire, rid, req, inputIds, maxNew, output);
    } catch (error) {
      if (!(error instanceof NoEndpointError)) throw error;
      if (this.#endpoint !== "auto") {
        throw new EngineRejectedError(
          `Engine has no ${wire.path} (ENGINE_API=vllm needs vLLM ≥ 0.20 for it, or ` +
            "VLLM_ENDPOINT=completions)",
        );
      }
      this.#endpoint = "completions";
      return await this.#callAt(COMPLETIONS, rid, req, inputIds, maxNew, output);
    }
  }

  #callAt(
    wire: Wire,
    rid: string,
    req: GenerateRequest,
    inputIds: PromptIds,
    maxNew: number,
    output: GeneratedSoFar,
  ): Promise<CallEnd> {
    const stream = req.onTokens !== undefined;
    const topK = req.topLogprobs ?? 0;
    const salt = this.#saltByVersion ? this.assumedVersion : null;
    const parts = wire.body(rid, inputIds, req.sampling, maxNew, topK, stream, salt);
    // `/abort_requests` is served with `--tokens-only` or in dev mode, and takes the engine's id
    // of the request; anywhere else (and for completions, named by the server) the dropped
    // connection is the abort.
    const onAbort = () =>
      void (wire === GENERATE &&
        this.#http.tell("/abort_requests", { request_ids: [`${INTERNAL_ID_PREFIX}${rid}`] }));
    // FastAPI's bare 404 (`{"detail": "Not Found"}`): a server without the route.
    const refuse = (status: number, text: string) =>
      status === 404 && wire === GENERATE && !/"error"/.test(text) ? new NoEndpointError() : null;
    return this.#http.post(
      wire.path,
      parts,
      req.signal,
      onAbort,
      async (body) => {
        if (!stream) {
          const answer = JSON.parse(await body.text()) as VllmAnswer;
          const choice = answer.choices?.[0] ?? {};
          output.addSpanned(wire.chunk(choice, topK), choice.weight_versions, this.assumedVersion);
          return await withRoutes(
            output,
            callEnd(choice, answer.usage),
            this.#routes(req, choice, answer.prompt_routed_experts, body),
          );
        }
        let final: VllmChoice | null = null;
        let usage: VllmAnswer["usage"] = null;
        let promptRows: VllmAnswer["prompt_routed_experts"] = null;
        const from = output.ids.length;
        for await (const chunk of engineChunks<VllmAnswer>(body)) {
          usage = chunk.usage ?? usage;
          promptRows = chunk.prompt_routed_experts ?? promptRows;
          const choice = chunk.choices?.[0];
          if (final || choice === undefined) continue; // past the end, or the usage chunk
          output.add(wire.chunk(choice, topK), this.assumedVersion);
          if (choice.finish_reason) final = choice;
        }
        // Versions come with the last chunk, covering this call's output: the tokens already
        // reported keep the label they were shown with, the record takes the engine's.
        if (final?.weight_versions) output.relabel(from, final.weight_versions);
        // Older servers send no chunk for an abort that sampled nothing new: the stream just ends.
        if (final === null) return { aborted: "stream ended without a finish", reportedMs: 0 };
        return await withRoutes(
          output,
          callEnd(final, usage),
          this.#routes(req, final, promptRows, body),
        );
      },
      {
        refuse,
        headers: routingHeaders(this.#routingKeys, VLLM_ROUTING_HEADER, req.routingKey),
        ...(req.routes && this.#moe
          ? { routes: { reader: "vllm", shape: this.#moe, dtype: expertDtype(this.#moe) } }
          : {}),
      },
    );
  }

  /**
   * The rows a call's last choice reported, every one from position 0 (vLLM has no start length);
   * `null` when it sent none; `undefined` when the request asked for none.
   */
  #routes(
    req: GenerateRequest,
    choice: VllmChoice,
    promptRows: VllmAnswer["prompt_routed_experts"],
    body: TransportBody,
  ): Promise<ExpertRows | null> | undefined {
    const moe = this.#moe;
    if (!req.routes || moe === null) return undefined;
    if (choice.finish_reason === "abort") return Promise.resolve(null);
    return this.#readRoutes(moe, choice.routed_experts, promptRows, body);
  }

  /** The rows of a finished choice (`#routes`). */
  async #readRoutes(
    moe: MoeShape,
    rows: VllmChoice["routed_experts"],
    promptRows: VllmAnswer["prompt_routed_experts"],
    body: TransportBody,
  ): Promise<ExpertRows | null> {
    // The base64 `.npy`, or the rows the worker reads of it (`body`'s).
    const read = await fieldRoutes(
      rows,
      body.routes?.bind(body),
      0,
      (base64) => decodeNpyRoutes(fromBase64(base64), moe, 0, expertDtype(moe)),
    );
    if (read !== null) return read;
    // Older servers: the prompt's rows, then the output's but its last.
    if (!Array.isArray(promptRows)) return null;
    return nestedRoutes([...promptRows, ...(Array.isArray(rows) ? rows : [])], moe);
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

const encoder = new TextEncoder();

/** Which vLLM endpoint generates: see {@linkcode VllmClient.endpoint}. */
export type VllmEndpoint = "auto" | "generate" | "completions";

/** The endpoints `VLLM_ENDPOINT` names. */
export const VLLM_ENDPOINTS: readonly VllmEndpoint[] = ["auto", "generate", "completions"];

function parseEndpoint(value: string | undefined): VllmEndpoint {
  const endpoint = value ?? "auto";
  if (!(VLLM_ENDPOINTS as readonly string[]).includes(endpoint)) {
    throw new TypeError(`No vLLM endpoint ${endpoint}: one of ${VLLM_ENDPOINTS.join(", ")}`);
  }
  return endpoint as VllmEndpoint;
}

/** The server has no such route (FastAPI's 404 `{"detail":"Not Found"}`, not an error body). */
class NoEndpointError extends EngineRejectedError {
  constructor() {
    super("Engine has no such endpoint");
  }
}

/** One generate endpoint's wire: where, the body around the prompt's ids, a choice's tokens. */
interface Wire {
  readonly path: string;
  body(
    rid: string,
    inputIds: PromptIds,
    sampling: SamplingParams,
    maxNew: number,
    topK: number,
    stream: boolean,
    /** The request's prefix-cache namespace, or `null`. */
    salt: string | null,
  ): [Uint8Array, Uint8Array, Uint8Array];
  chunk(choice: VllmChoice, topK: number): SampledChunk;
}

/** `POST /inference/v1/generate`: `token_ids` and vLLM's `SamplingParams`. */
const GENERATE: Wire = {
  path: "/inference/v1/generate",
  body: (rid, inputIds, sampling, maxNew, topK, stream, salt) => {
    const rest = JSON.stringify({
      sampling_params: vllmSampling(sampling, maxNew, topK),
      stream,
      // The last chunk's usage holds the prompt tokens served from the prefix cache.
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      ...(salt === null ? {} : { cache_salt: salt }),
    });
    return [
      encoder.encode(`{"request_id":"${rid}","token_ids":[`),
      inputIds.ascii(),
      encoder.encode(`],${rest.slice(1)}`),
    ];
  },
  chunk: chunkOf,
};

/**
 * `POST /v1/completions` with the prompt as token ids, the sampled ids returned
 * (`return_token_ids`) and logprobs named by id (`return_tokens_as_token_ids`); its sampling
 * fields at the top level. Its `top_logprobs` hold the sampled token and the `logprobs` most
 * likely, so it is asked for exactly the top logprobs wanted.
 */
const COMPLETIONS: Wire = {
  path: "/v1/completions",
  body: (rid, inputIds, sampling, maxNew, topK, stream, salt) => {
    const { logprobs: _, detokenize: _text, ...fields } = vllmSampling(sampling, maxNew, topK);
    const rest = JSON.stringify({
      ...fields,
      logprobs: topK,
      stream,
      ...(stream ? { stream_options: { include_usage: true } } : {}),
      return_token_ids: true,
      return_tokens_as_token_ids: true,
      request_id: rid,
      ...(salt === null ? {} : { cache_salt: salt }),
    });
    return [encoder.encode(`{"prompt":[`), inputIds.ascii(), encoder.encode(`],${rest.slice(1)}`)];
  },
  chunk: completionsChunkOf,
};

/** The id a completions logprob names (`token_id:N`), or `NaN`. */
function namedId(name: string): number {
  return name.startsWith("token_id:") ? Number(name.slice(9)) : NaN;
}

/**
 * A completions choice's tokens with their logprobs (and the `topK` most likely of each).
 *
 * @throws {StreamFormatError} when the logprobs do not name its ids.
 */
function completionsChunkOf(choice: VllmChoice, topK: number): SampledChunk {
  const ids = choice.token_ids ?? [];
  const names = choice.logprobs?.tokens ?? [];
  const logprobs = choice.logprobs?.token_logprobs ?? [];
  if (
    names.length !== ids.length || logprobs.length !== ids.length ||
    names.some((name, i) => namedId(name) !== ids[i])
  ) {
    throw new StreamFormatError("Engine returned logprobs that do not match its token_ids");
  }
  const tops = choice.logprobs?.top_logprobs ?? [];
  return {
    ids,
    logprobs: logprobs.map((logprob) => logprob ?? -9999),
    tops: topK === 0
      ? []
      : ids.map((_, i) =>
        Object.entries(tops[i] ?? {}).map(([name, logprob]) => [namedId(name), logprob] as const)
          .sort((a, b) => b[1] - a[1]).slice(0, topK)
      ),
  };
}

/**
 * The gateway's sampling parameters (SGLang's shape) as vLLM's `SamplingParams`: special tokens
 * kept and a matched stop string left in (the gateway parses them), the sampled token's logprob
 * always; one more top logprob than asked, since vLLM lists the sampled token first (the gateway
 * keeps the `topK` most likely). Text is decoded only when stop strings need it.
 */
export function vllmSampling(
  sampling: SamplingParams,
  maxNew: number,
  topK: number,
): Record<string, unknown> {
  const stops = sampling.stop ?? [];
  return {
    max_tokens: maxNew,
    ...(sampling.temperature === undefined ? {} : { temperature: sampling.temperature }),
    ...(sampling.top_p === undefined ? {} : { top_p: sampling.top_p }),
    ...(sampling.top_k === undefined ? {} : { top_k: sampling.top_k }),
    ...(sampling.sampling_seed === undefined ? {} : { seed: sampling.sampling_seed }),
    ...(stops.length > 0 ? { stop: stops } : {}),
    stop_token_ids: [...sampling.stop_token_ids],
    logprobs: topK > 0 ? topK + 1 : 0,
    skip_special_tokens: false,
    spaces_between_special_tokens: false,
    include_stop_str_in_output: true,
    detokenize: stops.length > 0,
  };
}

/**
 * A choice's tokens with their logprobs (and the `topK` most likely of each position).
 *
 * @throws {StreamFormatError} when the logprobs do not match the ids.
 */
function chunkOf(choice: VllmChoice, topK: number): SampledChunk {
  const ids = choice.token_ids ?? [];
  const content = choice.logprobs?.content ?? [];
  if (content.length !== ids.length || content.some((entry, i) => entry.token_id !== ids[i])) {
    throw new StreamFormatError("Engine returned logprobs that do not match its token_ids");
  }
  return {
    ids,
    logprobs: content.map((entry) => entry.logprob),
    tops: topK === 0
      ? []
      : content.map((entry) =>
        [...(entry.top_logprobs ?? [])].sort((a, b) => b.logprob - a.logprob).slice(0, topK)
          .map((top) => [top.token_id, top.logprob] as const)
      ),
  };
}

/** How a call's last choice says it ended (vLLM reports no time of its own). */
function callEnd(choice: VllmChoice, usage: VllmAnswer["usage"]): CallEnd {
  const cached = usage?.prompt_tokens_details?.cached_tokens;
  const facts = {
    reportedMs: 0,
    ...(typeof cached === "number" ? { cachedTokens: cached } : {}),
  };
  const finish = choice.finish_reason ?? "stop";
  if (finish === "abort") return { aborted: "Aborted by the engine", ...facts };
  if (finish === "error") throw new EngineUnavailableError("Engine failed the generation");
  const engineFinish: EngineFinish = finish === "length"
    ? { type: "length" }
    : { type: "stop", matched: choice.stop_reason ?? null };
  return { finish: engineFinish, ...facts };
}
