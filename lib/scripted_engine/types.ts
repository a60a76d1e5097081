/**
 * The scripted engine's options, the handle of a running engine, and the pause modes its
 * `/pause_generation` accepts.
 *
 * @module
 */
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import type { EngineCall, Fault, Reply, Script, Spelling } from "./script.ts";
import type { VisionSettings } from "../vision/mod.ts";
import type { MoeShape } from "../engine/mod.ts";

/** Options of {@linkcode startScriptedEngine}. */
export interface ScriptedEngineOptions {
  readonly tokenizer: ChatTokenizer;
  /** A function, or replies used in order (then {@linkcode DEFAULT_REPLY}). */
  readonly script?: Script | readonly Reply[];
  /** Sleep per output token, in milliseconds. */
  readonly latencyMs?: number;
  /** How scripted text is sampled (default `tokenizer`: as the tokenizer encodes it). */
  readonly spelling?: Spelling;
  readonly weightVersion?: string;
  readonly port?: number;
  /** Keep every call's `input_ids` in {@linkcode ScriptedEngine.calls} (default true). */
  readonly keepLog?: boolean;
  /** The fault a call plays when none is queued; `undefined` answers it normally. */
  readonly faultFor?: (call: EngineCall) => Fault | undefined;
  /**
   * Told of every call answered with tokens, once `call.output` is set: `finish` is the
   * `finish_reason.type` it was answered with (`stop`, `length` or `abort`). Dropped, refused
   * and unavailable calls are not answered.
   */
  readonly onAnswer?: (call: EngineCall, finish: string) => void;
  /**
   * Stream deltas (SGLang's `--incremental-streaming-output`) instead of the default cumulative
   * chunks, where each chunk repeats everything so far.
   */
  readonly incrementalStreaming?: boolean;
  /** The wire it speaks: SGLang's (the default) or vLLM's. */
  readonly dialect?: "sglang" | "vllm" | string;
  /**
   * A vLLM engine's generate endpoints: `both` (the default: `/inference/v1/generate` and
   * `/v1/completions`), or `completions` only, as servers older than 0.20 serve.
   */
  readonly vllmEndpoints?: "both" | "completions";
  /** Sequences its prefix cache keeps for the `cached_tokens` it reports (32; 0: none). */
  readonly prefixCacheEntries?: number;
  /** Tokens its prefix cache keeps (2,000,000), the least recently used dropped past them. */
  readonly prefixCacheTokens?: number;
  /**
   * It serves a vision-language model: `/generate` takes `image_data`, and the prompt must hold
   * as many `padId` tokens as the images give under `settings` (else it is refused, as an engine
   * refuses a prompt whose image tokens do not match its images). Without it, images are refused.
   */
  readonly vision?: { readonly settings: VisionSettings; readonly padId: number };
  /**
   * It serves a mixture-of-experts model of this shape and returns routed experts when asked
   * (`--enable-return-routed-experts`; `_routes.ts`). Without it, a request for them is refused.
   */
  readonly moe?: MoeShape;
  /**
   * What tells this engine's computations of a position apart from another engine's (a fleet's
   * workers each have their own): a recompute elsewhere routes some rows differently.
   */
  readonly routeSalt?: string;
  /**
   * How a vLLM engine returns routed experts: `npy` (the default, vLLM ≥ 0.21: base64 of a
   * `.npy` of every row on the choice) or `split` (older servers: the prompt's rows as nested
   * lists in `prompt_routed_experts`, the output's but its last on the choice).
   */
  readonly vllmRoutes?: "npy" | "split";
}

/** A running scripted engine. */
export interface ScriptedEngine {
  readonly url: string;
  /** Every `/generate` call, in arrival order. */
  readonly calls: EngineCall[];
  /** Every rid named by `/abort_request`. */
  readonly abortRequests: string[];
  /** Generations running now (aborted ones leave at once). */
  inFlight(): number;
  /** Replaces the script. */
  setScript(script: Script | readonly Reply[]): void;
  /** Queues a fault for the next call. */
  fault(fault: Fault): void;
  setLatency(ms: number): void;
  setWeightVersion(version: string): void;
  /** The mode of every `/pause_generation` call, in order. */
  readonly pauses: PauseMode[];
  /** The weight version after every weight update call, in order. */
  readonly weightUpdates: string[];
  /** The pause in force, or `null` while generating. */
  paused(): PauseMode | null;
  /** Its engine sessions: those opened and closed, in order, and how many are open. */
  readonly sessions: {
    readonly opened: readonly string[];
    readonly closed: readonly string[];
    readonly size: number;
  };
  /** Tokens its prefix cache holds now. */
  cachedTokens(): number;
  /** The status its `/health` answers (200; 503 as a draining worker answers). */
  setHealth(status: number): void;
  /**
   * Dies as a worker process does: running calls' connections are cut, its port refuses
   * connections, its prefix cache and sessions are lost.
   */
  kill(): Promise<void>;
  /** Comes back on the same port after {@linkcode ScriptedEngine.kill}, with nothing cached. */
  revive(): void;
  /** Serving now (not killed, not closed). */
  alive(): boolean;
  close(): Promise<void>;
}

/**
 * How a pause treats running calls: SGLang's `/pause_generation` modes (reference sglang.md §2)
 * and vLLM's `/pause?mode=` (`wait` lets running calls finish, `keep` holds them as `in_place`).
 */
export type PauseMode = "abort" | "retract" | "in_place" | "wait" | "keep";

/** Every {@linkcode PauseMode}: `/pause_generation` refuses any other. */
export const PAUSE_MODES: readonly string[] = ["abort", "retract", "in_place"];
