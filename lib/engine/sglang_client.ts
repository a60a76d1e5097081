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
import { Buffer } from "node:buffer";
import { Readable } from "node:stream";
import { Agent, request } from "undici";
import {
  type Engine,
  type EngineClientOptions,
  type EngineFinish,
  EngineRejectedError,
  EngineUnavailableError,
  type GenerateRequest,
  type Generation,
  newRid,
  type VersionSpan,
} from "./engine.ts";
import { PromptIds } from "./prompt_ids.ts";
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
  readonly #options: Required<Omit<EngineClientOptions, "metrics">>;
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

  async generate(req: GenerateRequest): Promise<Generation> {
    const started = performance.now();
    const output = new GeneratedSoFar(req);
    let aborts = 0;
    let reportedMs = 0;
    const firstRid = req.rid ?? newRid();
    const prompt = req.inputIds instanceof PromptIds ? req.inputIds : PromptIds.from(req.inputIds);
    for (;;) {
      const rid = aborts === 0 ? firstRid : newRid();
      const maxNew = req.sampling.max_new_tokens - output.ids.length;
      const final = await this.#call(rid, req, prompt.concat(output.ids), maxNew, output);
      reportedMs += (final.meta_info?.e2e_latency ?? 0) * 1000;
      const finish = final.meta_info?.finish_reason;
      if (finish?.type === "abort") {
        req.signal?.throwIfAborted();
        this.#metrics?.engineAborts.inc();
        if (
          aborts >= this.#options.maxResumes || output.ids.length >= req.sampling.max_new_tokens
        ) {
          throw new EngineUnavailableError(
            `Engine aborted the generation ${aborts + 1} times: ${finish.message ?? "Aborted"}`,
          );
        }
        aborts++;
        this.#metrics?.engineResumes.inc();
        continue;
      }
      const engineFinish: EngineFinish = finish?.type === "length"
        ? { type: "length" }
        : { type: "stop", matched: finish?.matched ?? null };
      return {
        rid: firstRid,
        outputIds: output.ids,
        logprobs: output.logprobs,
        ...(req.topLogprobs ? { topLogprobs: output.tops } : {}),
        finish: engineFinish,
        weightVersions: output.weightVersions,
        versionSpans: output.spans,
        aborts,
        engineMs: performance.now() - started,
        engineReportedMs: reportedMs,
      };
    }
  }

  /**
   * One `/generate` call for `inputIds` (the prompt, plus partial output when resuming): its
   * tokens go into `output` (as they stream, when the caller wants them so); returns the last
   * answer, whose `finish_reason` says how the call ended.
   */
  async #call(
    rid: string,
    req: GenerateRequest,
    inputIds: PromptIds,
    maxNew: number,
    output: GeneratedSoFar,
  ): Promise<RawOutput> {
    req.signal?.throwIfAborted();
    const stream = req.onTokens !== undefined;
    const sampling = JSON.stringify({ ...req.sampling, max_new_tokens: maxNew });
    const parts = [
      encoder.encode(`{"rid":"${rid}","input_ids":[`),
      inputIds.ascii(),
      encoder.encode(
        `],"sampling_params":${sampling},"return_logprob":true,${
          req.topLogprobs ? `"top_logprobs_num":${req.topLogprobs},` : ""
        }"stream":${stream}}`,
      ),
    ];
    const length = parts[0].length + parts[1].length + parts[2].length;
    // A long prompt's ids go out as they are, in a write of their own, not copied into one body.
    const body = parts[1].length < COPY_BELOW_BYTES ? Buffer.concat(parts) : Readable.from(parts);
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
        throw new EngineRejectedError(`Engine rejected the request: ${errorMessage(text)}`);
      }
      if (!stream) {
        const answer = JSON.parse(await response.body.text()) as RawOutput;
        output.addAnswer(answer);
        return answer;
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
        output.add(chunks.next(chunk), chunk.meta_info?.weight_version);
        if (chunk.meta_info?.finish_reason) final = chunk;
      }
      if (final) return final;
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

/**
 * Bytes of prompt ids below which a request body is one copy. A long prompt's ids (1.5 MB at
 * 256k tokens) are written from where they are kept: measured here, one copied 1.5 MB body cost
 * 1.3–2.3 ms of CPU to send, three parts 0.7–1.0 ms; below ~100 KB the two are alike.
 */
const COPY_BELOW_BYTES = 64 * 1024;

function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text);
    return String(body?.error?.message ?? body?.message ?? text).slice(0, 500);
  } catch {
    return text.slice(0, 500);
  }
}

/** A generation's output across its engine calls, and who is told of new tokens. */
class GeneratedSoFar {
  readonly ids: number[] = [];
  readonly logprobs: number[] = [];
  readonly tops: [number, number][][] = [];
  readonly spans: VersionSpan[] = [];
  readonly weightVersions: string[] = [];

  constructor(readonly request: GenerateRequest) {}

  /** A whole (non-streamed) answer, its tokens split by the version spans it reports. */
  addAnswer(answer: RawOutput): void {
    const tokens = newTokens(answer);
    const meta = answer.meta_info;
    const spans = meta?.weight_versions ?? [];
    const covered = spans.length > 0 && spans[0].start === 0 &&
      spans.at(-1)!.end === tokens.ids.length &&
      spans.every((span, i) => i === 0 || span.start === spans[i - 1].end);
    if (!covered) return this.add(tokens, meta?.weight_version);
    for (const span of spans) {
      this.add({
        ids: tokens.ids.slice(span.start, span.end),
        logprobs: tokens.logprobs.slice(span.start, span.end),
        tops: tokens.tops.slice(span.start, span.end),
      }, span.version);
    }
  }

  /** New tokens sampled under `version` (SGLang's default name when unnamed), reported at once. */
  add(tokens: NewTokens, version = "default"): void {
    if (tokens.ids.length === 0) return;
    const start = this.ids.length;
    for (let i = 0; i < tokens.ids.length; i++) {
      this.ids.push(tokens.ids[i]);
      this.logprobs.push(tokens.logprobs[i][0]);
    }
    if (this.request.topLogprobs) {
      for (let i = 0; i < tokens.ids.length; i++) {
        this.tops.push((tokens.tops[i] ?? []).map(([logprob, id]) => [id, logprob]));
      }
    }
    const last = this.spans.at(-1);
    if (last?.version === version) {
      this.spans[this.spans.length - 1] = { ...last, end: this.ids.length };
    } else this.spans.push({ version, start, end: this.ids.length });
    if (this.weightVersions.at(-1) !== version) this.weightVersions.push(version);
    this.request.onTokens?.({
      ids: tokens.ids,
      logprobs: this.logprobs.slice(start),
      weightVersion: version,
    });
  }
}
