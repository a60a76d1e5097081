/**
 * Client of SGLang's native `POST /generate` with token ids in and token ids out
 * (reference sglang.md §1, §6): pooled connections with a per-origin cap, a fixed-length `rid`
 * per call, streamed (`stream: true`) when the caller wants tokens as they are sampled,
 * `/abort_request` when the caller gives up, and engine-side aborts (a weight update pausing the
 * engine) resumed by resubmitting prompt + partial output. With engine sessions
 * (`engine_sessions.ts`), a chain's later turns send only their new tokens.
 *
 * @module
 */
import type { GatewayMetrics } from "../metrics/mod.ts";
import {
  type Engine,
  type EngineClientOptions,
  EngineRejectedError,
  EngineUnavailableError,
  type GenerateRequest,
  type Generation,
  newRid,
  routesStart,
} from "./engine.ts";
import { type EngineSession, EngineSessions } from "./engine_sessions.ts";
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
import { ChunkReader, type NewTokens, newTokens, type RawOutput } from "./stream_chunks.ts";
import {
  decodeSglangRoutes,
  expertDtype,
  type ExpertRows,
  type MoeShape,
} from "./routed_experts.ts";

/**
 * The SGLang engine client.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { startScriptedEngine } from "../scripted_engine/mod.ts";
 * import { defaultTokenizerPath } from "../config/mod.ts";
 * import { loadTokenizer } from "../tokenizer/mod.ts";
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
  /** Each chain's engine session on this engine, with `ENGINE_SESSIONS`. */
  readonly #sessions: EngineSessions | null;
  /** The model's MoE shape, to read routed experts with (`ROUTED_EXPERTS`). */
  readonly #moe: MoeShape | null;

  constructor(readonly url: string, options: EngineClientOptions) {
    this.#http = new EngineHttp(url, options.timeoutMs, options.connections, options.httpWorker);
    this.#maxResumes = options.maxResumes ?? 16;
    this.#metrics = options.metrics;
    this.#routingKeys = options.routingKeys ?? false;
    this.#saltByVersion = options.cacheSalt === "weight_version";
    this.#sessions = options.engineSessions
      ? new EngineSessions(this.#http, options.engineSessions)
      : null;
    this.#moe = options.moe ?? null;
  }

  release(chains: readonly string[]): void {
    this.#sessions?.close(chains);
  }

  /** Settles once the engine has answered every session close told so far. */
  async sessionsClosed(): Promise<void> {
    await this.#sessions?.settled();
  }

  delivered(): Promise<void> {
    return this.#http.delivered();
  }

  versionSet(version: string): string {
    const previous = this.#version;
    this.#version = version;
    return previous;
  }

  async generate(req: GenerateRequest): Promise<Generation> {
    // A prompt with images is sent whole with all of them: the engine's processor reads each
    // image's pads against its pixels, so none may be left to a session's earlier request.
    const session = req.chain && this.#sessions && !req.images?.length
      ? await this.#sessions.of(req.chain.id)
      : null;
    if (session === null) {
      return await generateResuming(
        req,
        req.sampling.max_new_tokens,
        { maxResumes: this.#maxResumes, metrics: this.#metrics },
        (rid, inputIds, maxNew, output) =>
          this.#call(rid, req, inputIds, maxNew, output, null, this.#routesFrom(req, false)),
      );
    }
    return await this.#generateInSession(req, session);
  }

  /**
   * A generation in the chain's engine session: the first call sends only the tokens past the
   * session's last request when the prompt extends it (`chain.after` names the turn that made
   * it), else the whole prompt as a new root of the session; resumed calls send the whole prompt
   * + output so far. A call the session cannot continue as the chain does (the prompt length the
   * engine reports differs, or the session is gone) is sent again whole, outside the session,
   * and the session opened again for the next turn.
   */
  async #generateInSession(req: GenerateRequest, session: EngineSession): Promise<Generation> {
    const node = session.node;
    session.node = null;
    let last = "";
    let resent = false;
    const onAnswered = req.onAnswered;
    const generation = await generateResuming(
      // Told as it will be returned: resent, once a call was sent again whole.
      onAnswered
        ? {
          ...req,
          onAnswered: (early) => onAnswered(resent ? { ...early, sessionResent: true } : early),
        }
        : req,
      req.sampling.max_new_tokens,
      { maxResumes: this.#maxResumes, metrics: this.#metrics },
      async (rid, inputIds, maxNew, output) => {
        const continues = output.ids.length === 0 && node !== null &&
          req.chain?.after === node.turn && inputIds.length > node.length;
        const params = continues
          ? { id: session.id, parent: node.rid, from: node.length }
          : { id: session.id, parent: null, from: 0 };
        if (!resent) {
          try {
            const end = await this.#call(
              rid,
              req,
              inputIds,
              maxNew,
              output,
              params,
              this.#routesFrom(req, false),
            );
            last = rid;
            return end;
          } catch (error) {
            if (!(error instanceof SessionMismatchError)) throw error;
            resent = true;
            this.#metrics?.engineSessionResends.inc();
            if (error.unverifiable) this.#sessions!.disable();
            else this.#sessions!.reopen(session);
          }
        }
        last = "";
        // Sent whole outside the session: the engine may compute the prefix again, so its rows
        // for recorded positions are asked for too, to be checked.
        return await this.#call(
          newRid(),
          req,
          inputIds,
          maxNew,
          output,
          null,
          this.#routesFrom(req, true),
        );
      },
    );
    if (last !== "") {
      session.node = {
        rid: last,
        turn: generation.rid,
        length: (req.inputIds.length) + generation.outputIds.length,
      };
    }
    return resent ? { ...generation, sessionResent: true } : generation;
  }

  /**
   * The position a call asks routed experts from (`routed_experts_start_len`), `null` when the
   * request asks for none; 0 for a call that may compute the prefix again (`recompute`).
   */
  #routesFrom(req: GenerateRequest, recompute: boolean): number | null {
    if (!req.routes || this.#moe === null) return null;
    return recompute ? 0 : routesStart(req.routes);
  }

  /**
   * One `/generate` call for `inputIds` (the prompt, plus partial output when resuming): its
   * tokens go into `output` (as they stream, when the caller wants them so); resolves to how the
   * call ended, with the routed experts from `routesFrom` when it asked for them.
   */
  #call(
    rid: string,
    req: GenerateRequest,
    inputIds: PromptIds,
    maxNew: number,
    output: GeneratedSoFar,
    session: SessionCall | null,
    routesFrom: number | null,
  ): Promise<CallEnd> {
    const stream = req.onTokens !== undefined;
    const sampling = JSON.stringify({ ...req.sampling, max_new_tokens: maxNew });
    const params = session === null
      ? ""
      : `"session_params":${JSON.stringify({ id: session.id, rid: session.parent })},`;
    const parts: [Uint8Array, Uint8Array, Uint8Array] = [
      encoder.encode(`{"rid":"${rid}","input_ids":[`),
      session?.parent ? inputIds.tail(inputIds.length - session.from) : inputIds.ascii(),
      encoder.encode(
        `],${imageData(req.images)}"sampling_params":${sampling},"return_logprob":true,${
          req.topLogprobs ? `"top_logprobs_num":${req.topLogprobs},` : ""
        }${this.#saltByVersion ? `"cache_salt":${JSON.stringify(this.#version)},` : ""}${
          routesFrom === null
            ? ""
            : `"return_routed_experts":true,"routed_experts_start_len":${routesFrom},`
        }${params}"stream":${stream}}`,
      ),
    ];
    // In a session, the engine builds the prompt: it must be the chain's, as long, or the call is
    // sent again whole (an abort that sampled nothing: the session or its request was gone).
    const check = (meta: RawOutput["meta_info"] | undefined, sampled: number) => {
      if (session === null) return;
      const gone = meta?.finish_reason?.type === "abort" && sampled === 0;
      if (meta?.prompt_tokens === inputIds.length && !gone) return;
      void this.#http.tell("/abort_request", { rid, abort_all: false });
      throw new SessionMismatchError(
        `Engine session ${session.id} built a prompt of ${meta?.prompt_tokens} tokens, ` +
          `not ${inputIds.length}`,
        // An engine that reports no prompt length cannot be checked: no sessions on it.
        typeof meta?.prompt_tokens !== "number",
      );
    };
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
          check(meta, (answer.output_ids ?? meta?.output_token_logprobs ?? []).length);
          output.addSpanned(
            sampled(newTokens(answer)),
            meta?.weight_versions,
            meta?.weight_version,
          );
          return await withRoutes(output, callEnd(answer), this.#routes(answer, routesFrom, body));
        }
        const chunks = new ChunkReader();
        let final: RawOutput | null = null;
        let checked = false;
        for await (const chunk of engineChunks<RawOutput>(body)) {
          if (final) continue;
          const tokens = sampled(chunks.next(chunk));
          // Nothing of a session's call reaches the client before its prompt is known right.
          if (!checked) check(chunk.meta_info, tokens.ids.length);
          checked = true;
          output.add(tokens, chunk.meta_info?.weight_version);
          if (chunk.meta_info?.finish_reason) final = chunk;
        }
        // The rows come with the last chunk, once the whole sequence has been forwarded.
        if (final) {
          return await withRoutes(output, callEnd(final), this.#routes(final, routesFrom, body));
        }
        throw new EngineUnavailableError("Engine stream ended before the generation finished");
      },
      {
        headers: routingHeaders(this.#routingKeys, SGLANG_ROUTING_HEADER, req.routingKey),
        ...(routesFrom !== null && this.#moe
          ? { routes: { reader: "sglang", shape: this.#moe, dtype: expertDtype(this.#moe) } }
          : {}),
      },
    );
  }

  /**
   * The rows a finished call reported, when it asked from `from` (the string, or the rows the
   * worker reads of it: `body`'s); `null` when it sent none; `undefined` when it asked for none.
   */
  #routes(
    final: RawOutput,
    from: number | null,
    body: TransportBody,
  ): Promise<ExpertRows | null> | undefined {
    const moe = this.#moe;
    if (from === null || moe === null) return undefined;
    if (final.meta_info?.finish_reason?.type === "abort") return Promise.resolve(null);
    return fieldRoutes(
      final.meta_info?.routed_experts,
      body.routes?.bind(body),
      from,
      (base64) => decodeSglangRoutes(base64, moe, from, expertDtype(moe)),
    );
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

const encoder = new TextEncoder();

/** A call in an engine session: continuing request `parent` from token `from`, or a new root. */
interface SessionCall {
  readonly id: string;
  readonly parent: string | null;
  readonly from: number;
}

/** The engine session did not build the chain's prompt; the call is sent again whole. */
class SessionMismatchError extends EngineRejectedError {
  constructor(message: string, readonly unverifiable: boolean) {
    super(message);
    this.name = "SessionMismatchError";
  }
}

/**
 * The header SGLang's model gateway places a request by (`consistent_hashing`, `manual`
 * policies: sgl-model-gateway's `policies/consistent_hashing.rs`, `manual.rs`).
 */
export const SGLANG_ROUTING_HEADER = "x-smg-routing-key";

/** How the answer (or last chunk) `final` says the call ended. */
function callEnd(final: RawOutput): CallEnd {
  const reportedMs = (final.meta_info?.e2e_latency ?? 0) * 1000;
  const cached = final.meta_info?.cached_tokens;
  const facts = {
    reportedMs,
    ...(typeof cached === "number" ? { cachedTokens: cached } : {}),
  };
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

/**
 * The `image_data` field of a call (with its trailing comma), `""` without images: each image as
 * a `data:` URL, which SGLang's `load_image` reads, in prompt order.
 */
function imageData(images: GenerateRequest["images"]): string {
  if (!images?.length) return "";
  return `"image_data":${
    JSON.stringify(images.map((image) => `data:${image.mediaType};base64,${image.data}`))
  },`;
}
