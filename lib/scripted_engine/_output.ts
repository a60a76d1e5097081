/**
 * A call's output as the engine produces it, and the responses that show it in SGLang's shape.
 *
 * @module
 */
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import { scriptedLogprob, scriptedTopLogprobs } from "./logprobs.ts";
import type { EngineCall } from "./script.ts";
import { type MoeShape, toBase64 } from "../engine/mod.ts";

/** A call's output as produced so far, and its responses in SGLang's shape (sglang.md §1.3). */
export class Output {
  produced = 0;
  /** Prompt tokens its prefix cache served. */
  cachedTokens = 0;
  /** Output tokens sampled under each weight version, as newer SGLang reports them. */
  readonly spans: { version: string; start: number; end: number }[] = [];
  /** Told when tokens were produced. */
  onEmit: () => void = () => {};
  /**
   * The routed experts the call answers with (int32 rows from the position it asked for), once
   * it is done, the model's shape, and whether they go in vLLM's older split form; `null` when
   * the call asked for none.
   */
  routes: {
    readonly rows: () => Int32Array;
    readonly shape: MoeShape;
    readonly split: boolean;
  } | null = null;

  constructor(
    readonly call: EngineCall,
    readonly planned: readonly number[],
    readonly topK: number,
    readonly received: number,
    readonly retractions: () => number,
    readonly tokenizer: ChatTokenizer,
  ) {}

  /** Tokens up to `to` were sampled under `version`. */
  emit(to: number, version: string): void {
    if (this.produced === 0) this.call.firstTokenAt = performance.now();
    const last = this.spans.at(-1);
    if (last?.version === version) last.end = to;
    else this.spans.push({ version, start: this.produced, end: to });
    this.produced = to;
    this.call.produced = to;
    this.onEmit();
  }

  ids(): number[] {
    return this.planned.slice(0, this.produced);
  }

  /**
   * The response (non-streaming) or stream chunk showing output `from..`; `finish` null
   * mid-stream.
   */
  chunk(from: number, finish: Record<string, unknown> | null, version: string): unknown {
    const ids = this.planned.slice(from, this.produced);
    const k = this.topK;
    // SGLang sends the rows once the whole sequence was forwarded: on the answer or the last
    // chunk, and none for an aborted call. Computed first: they are the engine's time.
    const routes = finish === null || finish.type === "abort" || this.routes === null
      ? null
      : toBase64(new Uint8Array(this.routes.rows().buffer));
    return {
      text: this.tokenizer.decode(ids),
      output_ids: ids,
      meta_info: {
        id: this.call.rid,
        finish_reason: finish,
        prompt_tokens: this.call.inputIds.length,
        completion_tokens: this.produced,
        cached_tokens: this.cachedTokens,
        weight_version: version,
        weight_versions: this.spans.map((span) => ({ ...span })),
        num_retractions: this.retractions(),
        output_token_logprobs: ids.map((t, i) => [scriptedLogprob(t, from + i), t, null]),
        ...(k > 0
          ? { output_top_logprobs: ids.map((t, i) => scriptedTopLogprobs(t, from + i, k)) }
          : {}),
        ...(finish === null ? {} : { e2e_latency: (performance.now() - this.received) / 1000 }),
        ...(routes === null ? {} : { routed_experts: routes }),
      },
    };
  }
}
