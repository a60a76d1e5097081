/**
 * The inference engine as the gateway sees it, whatever its dialect: a generation (prompt ids in,
 * sampled ids, logprobs and weight versions out, streamed or not, aborted when the client
 * leaves), the control a trainer drives around a weight update (pause, continue, weight
 * versions, across the engine's workers), and the dialect record that makes both for one kind of
 * engine. SGLang is the first dialect (`sglang.ts`); `dialects.ts` registers them.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import type { GatewayMetrics } from "../metrics/mod.ts";
import type { EngineHttpWorker } from "./http_worker.ts";
import type { PromptIds } from "./prompt_ids.ts";
import type { ExpertRows, MoeShape } from "./routed_experts.ts";
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
  /** The weight versions that sampled the output, in order (each span's, repeats merged). */
  readonly weightVersions: string[];
  /** The weight version that sampled each output token, run-length: spans in order, covering all. */
  readonly versionSpans: VersionSpan[];
  /** Engine-side aborts that were resumed. */
  readonly aborts: number;
  /** Wall time spent waiting on the engine, in milliseconds. */
  readonly engineMs: number;
  /** The engine's own account of its time (`meta_info.e2e_latency`), in milliseconds. */
  readonly engineReportedMs: number;
  /**
   * Prompt tokens of the first call the engine reports served from its prefix cache (SGLang's
   * `meta_info.cached_tokens`, vLLM's `usage.prompt_tokens_details.cached_tokens`); absent when
   * it reports none.
   */
  readonly cachedTokens?: number;
  /** The engine worker that sampled it, when the gateway placed it (`ENGINE_PLACEMENT=gateway`). */
  readonly worker?: string;
  /** Times a worker died under it and it went on on another (prompt + output so far). */
  readonly failovers?: number;
  /**
   * The engine session's prompt did not match the chain (its reported `prompt_tokens` differ, or
   * the session was gone): the prompt was sent again whole.
   */
  readonly sessionResent?: boolean;
  /**
   * The routed experts the engine reported (R3), when the request asked for them: rows from
   * `start` (the chain's recorded positions, or 0 for a recompute the gateway checks) to the
   * prompt ++ output's last token but one; `null` when the engine sent none.
   */
  readonly routes?: ExpertRows | null;
}

/**
 * What a generation asks of routed experts (R3). The engine is asked for rows from position
 * `recorded` on — what the chain has not recorded yet — or, with `verify`, from 0: a recompute
 * (a rewind, a failover to another worker, a resend outside an engine session) whose rows for
 * recorded positions the gateway compares with what it recorded.
 */
export interface RoutesRequest {
  /** Positions of the prompt the chain has recorded rows for. */
  readonly recorded: number;
  readonly verify?: boolean;
}

/** The first position an engine call asks routed experts from. */
export function routesStart(routes: RoutesRequest): number {
  return routes.verify ? 0 : routes.recorded;
}

/** Output positions `start..end` (end exclusive), sampled under weight `version`. */
export interface VersionSpan {
  readonly version: string;
  readonly start: number;
  readonly end: number;
}

/** Tokens the engine has just sampled, as a streamed generation reports them. */
export interface SampledTokens {
  readonly ids: readonly number[];
  readonly logprobs: readonly number[];
  /** The weight version that sampled them. */
  readonly weightVersion: string;
  /** At each position the most likely tokens `[id, logprob]`, when they were asked for. */
  readonly tops?: readonly (readonly [number, number])[][];
}

/** The chain a generation continues, for placing it and for its engine session. */
export interface ChainRef {
  /** The chain's id: its generations go to one worker, and share one engine session. */
  readonly id: string;
  /** A chain placed beside this one when its worker has room (a sub-agent's parent). */
  readonly near?: string | null;
  /**
   * The request id of the chain's last turn, when this prompt is that turn's prompt and output
   * extended (no rewind, no realignment): only then may an engine session send the new tokens
   * alone.
   */
  readonly after?: string | null;
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
  /**
   * Told of tokens as they are sampled: the engine is asked to stream (`stream: true`). Resumed
   * calls after an engine-side abort continue the same report.
   */
  readonly onTokens?: (tokens: SampledTokens) => void;
  /**
   * What a router in front of the engine places the request by, so requests that share a prefix
   * reach the worker that has it cached: the dialect sends it as its router's key header.
   */
  readonly routingKey?: string;
  /** The chain it continues: where the gateway places it, and its engine session. */
  readonly chain?: ChainRef;
  /**
   * The prompt's images in order, one per run of image pad tokens in `inputIds` (a vision model:
   * the engine's processor turns each into the embeddings those pads stand for).
   */
  readonly images?: readonly EngineImage[];
  /** Ask for the experts each MoE layer routed every new token to (`ROUTED_EXPERTS`). */
  readonly routes?: RoutesRequest;
  /**
   * Told the generation as it will end but for its routed experts, while those are still being
   * read (the engine HTTP worker decodes them after passing the answer on): what may be settled
   * meanwhile. Told again for a later attempt (a failover); the generation returned may differ
   * from the last told.
   */
  readonly onAnswered?: (generation: Omit<Generation, "routes">) => void;
}

/** An image as an engine takes it: its media type and its bytes as base64. */
export interface EngineImage {
  readonly mediaType: string;
  readonly data: string;
}

/**
 * Something that turns prompt token ids into sampled token ids: one engine (a worker or a
 * router), in its dialect.
 */
export interface Engine {
  /** Base URL of the engine. */
  readonly url: string;
  /**
   * Samples from `request.inputIds` until a stop or the length limit: streamed when the request
   * has `onTokens`; aborted on the engine when `request.signal` fires (nothing is returned);
   * resumed with prompt + partial output when the engine aborts it itself (a weight update).
   */
  generate(request: GenerateRequest): Promise<Generation>;
  /**
   * Told the weight version the trainer set through the gateway: what a dialect labels tokens
   * with when its engine names none, and the cache namespace under `CACHE_SALT=weight_version`.
   * Resolves to the version it replaces, for a set the workers refused to be taken back.
   */
  versionSet?(version: string): string;
  /**
   * Resolves once every answer piece the engine has sent so far has reached the generations it
   * belongs to (through the engine HTTP worker, a message later): a version set after it labels no
   * token sampled before it.
   */
  delivered?(): Promise<void>;
  /**
   * These chains can no longer continue (their session closed, wiped, replaced or expired): their
   * placement and engine sessions are let go. Best effort, never throws.
   */
  release?(chains: readonly string[]): void;
  /** Closes its connections; a pending generation fails. */
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

/** How a dialect's client reaches the engine. */
export interface EngineClientOptions {
  /** Most open connections to the engine's origin. */
  readonly connections: number;
  /** Longest one engine call may take, in milliseconds. */
  readonly timeoutMs: number;
  /** Most engine-side aborts resumed within one generation. */
  readonly maxResumes?: number;
  /** Counts engine-side aborts and resumes. */
  readonly metrics?: GatewayMetrics;
  /** The endpoint, for a dialect that has more than one (vLLM: `auto`, `generate`, `completions`). */
  readonly endpoint?: string;
  /** Send each request's routing key to the router (`ENGINE_PLACEMENT=router`). */
  readonly routingKeys?: boolean;
  /** The prefix-cache namespace of a request: none, or the weight version it is sampled under. */
  readonly cacheSalt?: "none" | "weight_version";
  /**
   * Keep each chain in an engine session (SGLang's `/open_session`), its later turns sending only
   * their new tokens; closed after `idleS` seconds without a request, or when released.
   */
  readonly engineSessions?: { readonly idleS: number; readonly capacity: number };
  /** The thread the requests are made on (the gateway's engine HTTP worker); else the caller's. */
  readonly httpWorker?: EngineHttpWorker;
  /** The served model's MoE shape, to read the routed experts a request asks for (`ROUTED_EXPERTS`). */
  readonly moe?: MoeShape;
}

/** A fixed-length request id (32 hex digits), so SGLang's prefix-matching abort hits one call. */
export function newRid(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/**
 * How a pause treats running requests, each dialect taking its own ({@linkcode
 * EngineDialect.pauseModes}). `abort` (both) ends them with their partial output: the gateway
 * resubmits prompt + partial output, which waits for continue. SGLang: `retract` sends them back
 * to the waiting queue, `in_place` freezes them with their KV cache. vLLM: `wait` lets them
 * finish, `keep` freezes them with their KV. Only `abort` costs an extra engine request.
 */
export type PauseMode = "abort" | "retract" | "in_place" | "wait" | "keep";

/** What one worker answered. */
export interface WorkerAnswer {
  readonly url: string;
  /** The worker's JSON answer (its text when not JSON), or `null` when it could not be reached. */
  readonly body: unknown;
}

/** A call that some workers did not accept; the others did, and are told in `answers`. */
export class EngineControlError extends Error implements CodedError {
  readonly code = "engine_control_failed" as const;
  constructor(
    readonly failures: readonly { url: string; error: string }[],
    readonly answers: readonly WorkerAnswer[],
  ) {
    super(
      `${failures.length} engine worker(s) failed: ` +
        failures.map((f) => `${f.url}: ${f.error}`).join("; "),
    );
    this.name = "EngineControlError";
  }
}

/** Options of {@linkcode EngineControl}. */
export interface EngineControlOptions {
  /** The workers to call; `null` asks the engine URL for its workers. */
  readonly workers: readonly string[] | null;
  /** Longest one call may take (an abort pause waits for running requests to return). */
  readonly timeoutMs: number;
}

/** Pause, continue and weight versions across an engine's workers, in the engine's dialect. */
export interface EngineController {
  /** The worker URLs calls go to. */
  workers(): Promise<string[]>;
  /** Pauses generation on every worker. */
  pause(mode: PauseMode): Promise<WorkerAnswer[]>;
  /** Continues generation on every worker. */
  continue(): Promise<WorkerAnswer[]>;
  /**
   * Names the weights every worker serves from now on: later tokens carry `version`.
   * `abortAll` also aborts running requests (which the gateway resumes).
   */
  setWeightVersion(version: string, abortAll: boolean): Promise<WorkerAnswer[]>;
  /** Each worker's current weight version. */
  weightVersions(): Promise<{ url: string; version: string }[]>;
}

/**
 * One engine dialect: its name (`ENGINE_API`), and how the gateway makes a client of an engine
 * speaking it and a controller of its workers. A new dialect is a file with its record and a line
 * in `dialects.ts`.
 */
export interface EngineDialect {
  /** Its `ENGINE_API` value. */
  readonly name: string;
  /** Its name for people. */
  readonly title: string;
  /** A client of the engine at `url`. */
  connect(url: string, options: EngineClientOptions): Engine;
  /** The pause modes its engine takes, the default first. */
  readonly pauseModes: readonly PauseMode[];
  /** Its engine keeps sessions a chain's turns continue (`ENGINE_SESSIONS`). */
  readonly sessions: boolean;
  /** It sends a prompt's images beside its tokens (`GenerateRequest.images`). */
  readonly images: boolean;
  /** Its engine returns the experts each token was routed to (`ROUTED_EXPERTS`, R3). */
  readonly routedExperts: boolean;
  /** A controller of the workers behind `url` (or the configured ones). */
  control(url: string, options: EngineControlOptions): EngineController;
}
