/**
 * xtuner's trajectory record (the one-line JSONL its agent loop dumps), message by message with
 * token ids. `agent.messages` holds every token of `prompt_ids ++ response_ids` once, in order,
 * so a trainer can check that the messages concatenate to exactly the arrays it trains on.
 *
 * How the tokens are cut into messages:
 * - An `assistant` message with `sampled: true` is one turn's output: the engine's tokens, then
 *   the closing token the gateway appended when the output did not end the turn (cut by
 *   `max_tokens` or a stop string; mask 0). It carries `loss_mask`, `logprobs`, `finish_reason`
 *   and, when the turn called tools, `tool_calls` as parsed for the agent (names known, values
 *   untyped).
 * - The tokens before each output (the first prompt, then each turn's delta) are cut where the
 *   chat template starts a message: at its family's role markers (`ModelFamily.roles`: ChatML's
 *   `<|im_start|>`, Kimi's `<|im_system|>`…, GLM's `<|user|>`…, DeepSeek's `<｜User｜>`…,
 *   harmony's `<|start|>`). A message runs from one marker to the next and takes the role the marker names;
 *   tool results are `tool` (Qwen3 and GLM render them as `<tool_response>` blocks under one
 *   marker: each block is a message). Then: the assistant header before an output
 *   (`<|im_start|>assistant\n`, with its empty think block when thinking is off) ends the message
 *   before it, since the assistant message is what was sampled; tokens before a delta's first
 *   marker (the `\n` after `<|im_end|>`) begin the next message, unless the model sampled the
 *   marker that opens them (GLM's `<|observation|>`): then they are that marker's message;
 *   DeepSeek's system prompt, before any marker, is a `system` message. An assistant message of
 *   the history in a prompt (not sampled in this chain) is `sampled: false`, like every other.
 * - A template whose markers are not tokens of the tokenizer: each run is one `context` message.
 *
 * `content` is the message's tokens decoded, special tokens kept; the ids are the truth.
 *
 * @module
 */
import { type ChainArrays, type FinishReason, type TurnRecord } from "../chain/mod.ts";
import type { ChatTool, ChatToolCall } from "../chat/mod.ts";
import { readTurnMessages, type RewardedSession } from "../session/mod.ts";
import { parseTurnOutput, untypedTools } from "../session/output.ts";
import { type MessageRole, modelFamily, type RoleMarkers } from "../output/mod.ts";
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import type { TrainingSegment } from "./allocate_reward.ts";
import {
  type ExportedImage,
  type SegmentIdentity,
  segmentIdentity,
  segmentImages,
} from "./samples.ts";
import type { Store } from "../kv/mod.ts";

/** A message's role; `context` where the template does not say. */
export type XtunerRole = MessageRole;

/** Prompt tokens: one message of the conversation as the template rendered it (mask 0). */
export interface XtunerContextMessage {
  readonly role: XtunerRole;
  readonly content: string;
  readonly token_ids: number[];
  readonly sampled: false;
}

/** One turn's output: what the engine sampled, and its closing token if one was appended. */
export interface XtunerSampledMessage {
  readonly role: "assistant";
  readonly content: string;
  readonly token_ids: number[];
  readonly sampled: true;
  /** 1 on sampled tokens that are trained on; 0 on closing tokens and masked turns. */
  readonly loss_mask: number[];
  /** The engine's logprob of each sampled token; 0 on closing tokens. */
  readonly logprobs: number[];
  readonly finish_reason: FinishReason;
  /** The tool calls the agent received; absent when there were none. */
  readonly tool_calls?: ChatToolCall[];
}

/** A message of `agent.messages`. */
export type XtunerMessage = XtunerContextMessage | XtunerSampledMessage;

/**
 * xtuner's rollout status, as its enum's values: `aborted` (the session was closed as aborted: a
 * rollout cancelled, timed out or failed), `failed` (nothing to train on: every loss-mask value
 * 0), `truncated` (the last turn was cut by `max_tokens`), else `completed`.
 */
export type XtunerStatus = "completed" | "aborted" | "failed" | "truncated";

/** The judger's reward: the segment's share as `score`, the payload's other keys as metrics. */
export interface XtunerReward {
  readonly score: number;
  readonly [metric: string]: unknown;
}

/** One trajectory record. */
export interface XtunerRecord extends SegmentIdentity {
  readonly status: XtunerStatus;
  /** How the last turn ended. */
  readonly finish_reason: string | null;
  readonly prompt_len: number;
  /** `len(response_ids)`. */
  readonly response_len: number;
  /** The first prompt decoded, to check the chat template. */
  readonly raw_prompt: string;
  /** `null` until the trainer set a reward. */
  readonly reward: XtunerReward | null;
  readonly agent: {
    readonly messages: XtunerMessage[];
    /** The tools of the chain's first request, when the session records messages; else `null`. */
    readonly tools: readonly ChatTool[] | null;
    /** Names of the tools the chain's prompt showed the model. */
    readonly tool_names: readonly string[];
    /** Turns whose reply called at least one tool. */
    readonly tool_turns: number;
  };
  readonly prompt_ids: number[];
  readonly response_ids: number[];
  readonly loss_mask: number[];
  readonly logprobs: number[];
  readonly version_spans: ChainArrays["version_spans"];
  /** The images the tokens hold (`ExportedImage`s); absent without images. */
  readonly images?: ExportedImage[];
}

/** What the export reads of the tokenizer. */
export type XtunerTokenizer = Pick<ChatTokenizer, "decode" | "encode" | "formats" | "ending">;

/**
 * A segment as xtuner's trajectory record; `tools` from {@linkcode recordedTools}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { anthropicTurnInput } from "../anthropic/mod.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession, startTurn } from "../session/mod.ts";
 * import { readSessionSegments, selectSegments, toXtuner } from "./mod.ts";
 * // A session of one turn, answered by the built-in scripted engine.
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * const { session: { id } } = await openSession(deps.kv);
 * const messages = [{ role: "user" as const, content: "hi" }];
 * const context = { sessionId: id, signingSecret: "secret" };
 * const input = anthropicTurnInput({ model: "m", max_tokens: 64, messages }, context);
 * await (await startTurn(deps, input)).completion;
 * const { session, segments: all } = await readSessionSegments(deps.kv, id);
 * const policy = { allocation: "uniform", includeSide: false, overlong: "mask" } as const;
 * const limits = { maxSegments: 64, maxSegmentTokens: 0 };
 * const { segments: [segment] } = selectSegments(session, all, { ...policy, ...limits });
 * const record = toXtuner(session, segment, deps.tokenizer, null);
 * const { prompt_ids, response_ids } = segment.arrays;
 * assert.deepEqual(record.agent.messages.flatMap((m) => m.token_ids), [
 *   ...prompt_ids,
 *   ...response_ids,
 * ]);
 * await deps.close();
 * ```
 * @throws {RangeError} when the segment's turns do not add up to its arrays.
 */
export function toXtuner(
  session: RewardedSession,
  segment: TrainingSegment,
  tokenizer: XtunerTokenizer,
  tools: readonly ChatTool[] | null,
): XtunerRecord {
  const { prompt_ids, response_ids, loss_mask, logprobs, version_spans } = segment.arrays;
  const { score: _, ...metrics } = session.reward ?? {};
  const images = segmentImages(session.id, segment.turns);
  return {
    ...segmentIdentity(session, segment),
    status: statusOf(session, segment),
    finish_reason: segment.stats.finish_reason,
    prompt_len: prompt_ids.length,
    response_len: response_ids.length,
    raw_prompt: tokenizer.decode(prompt_ids),
    reward: session.reward === null || segment.reward === null
      ? null
      : { score: segment.reward, ...metrics },
    agent: {
      messages: segmentMessages(segment, tokenizer),
      tools,
      tool_names: segment.header.tools,
      tool_turns: segment.stats.tool_turns,
    },
    prompt_ids,
    response_ids,
    loss_mask,
    logprobs,
    version_spans,
    ...(images.length > 0 ? { images } : {}),
  };
}

/**
 * The tools of a segment's first request, kept when its session records messages
 * (`record_messages`); `null` when it does not: only their names are kept then.
 */
export async function recordedTools(
  kv: Store,
  sessionId: string,
  segment: Pick<TrainingSegment, "header" | "turns">,
): Promise<readonly ChatTool[] | null> {
  const first = segment.turns[0];
  const request = first ? await readTurnMessages(kv, sessionId, segment.header.id, first) : null;
  return request === null ? null : request.tools ?? [];
}

function statusOf(session: RewardedSession, segment: TrainingSegment): XtunerStatus {
  if (session.closedAs === "aborted") return "aborted";
  if (!segment.arrays.loss_mask.includes(1)) return "failed";
  return segment.stats.finish_reason === "length" ? "truncated" : "completed";
}

/** The segment's tokens as messages (see the module's rule). */
function segmentMessages(segment: TrainingSegment, tokenizer: XtunerTokenizer): XtunerMessage[] {
  const { prompt_ids, response_ids, loss_mask, logprobs } = segment.arrays;
  const markers = markersOf(tokenizer);
  const messages: XtunerMessage[] = [];
  let at = 0;
  let last: number | undefined;
  segment.turns.forEach((turn, index) => {
    if (index === 0 && turn.deltaLen !== prompt_ids.length) {
      throw new RangeError(`Cannot split segment "${segment.header.id}": prompt length differs`);
    }
    const delta = index === 0 ? prompt_ids : response_ids.slice(at, at + turn.deltaLen);
    if (index > 0) at += turn.deltaLen;
    messages.push(...contextMessages(delta, index === 0, last, markers, tokenizer));
    const end = at + turn.outputLen + turn.closingLen;
    const token_ids = response_ids.slice(at, end);
    if (token_ids.length !== end - at) {
      throw new RangeError(`Cannot split segment "${segment.header.id}": turns exceed its tokens`);
    }
    const calls = toolCalls(tokenizer, token_ids.slice(0, turn.outputLen), turn);
    messages.push({
      role: "assistant",
      content: tokenizer.decode(token_ids),
      token_ids,
      sampled: true,
      loss_mask: loss_mask.slice(at, end),
      logprobs: logprobs.slice(at, end),
      finish_reason: turn.finishReason,
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
    });
    at = end;
    last = token_ids.at(-1);
  });
  if (at !== response_ids.length) {
    throw new RangeError(`Cannot split segment "${segment.header.id}": its turns end early`);
  }
  return messages;
}

/** The tool calls of an output as the agent received them (T6). */
function toolCalls(
  tokenizer: XtunerTokenizer,
  output: readonly number[],
  turn: TurnRecord,
): ChatToolCall[] {
  if (turn.toolCalls === 0) return [];
  const end = { reason: turn.finishReason, stopSequence: turn.stopSequence };
  const tools = untypedTools(turn.toolNames);
  const { blocks } = parseTurnOutput(tokenizer, output, end, turn.startsInReasoning, tools);
  return blocks.flatMap((block) =>
    block.type === "tool_call"
      ? [{ type: "function" as const, function: { name: block.name, arguments: block.input } }]
      : []
  );
}

/** Where a family's template starts messages, and what role each has. */
/** Tokens from a message's start that its role is read from (a marker and a role name). */
const ROLE_PEEK_TOKENS = 16;

/** The markers resolved to the tokenizer's ids: what a run of prompt tokens is cut at. */
interface Resolved {
  readonly markers: RoleMarkers;
  readonly openers: ReadonlySet<number>;
  readonly toolBlock: number | null;
}

const resolvedCache = new WeakMap<XtunerTokenizer, Resolved | null>();

/** The tokenizer's markers, or `null` when its family's are not single tokens of it. */
function markersOf(tokenizer: XtunerTokenizer): Resolved | null {
  if (resolvedCache.has(tokenizer)) return resolvedCache.get(tokenizer)!;
  const markers = modelFamily(tokenizer.formats).roles;
  const id = (text: string) => {
    const ids = tokenizer.encode(text);
    return ids.length === 1 ? ids[0] : null;
  };
  const openers = markers.openers.map(id);
  const resolved = openers.includes(null) ? null : {
    markers,
    openers: new Set(openers as number[]),
    toolBlock: markers.toolBlock === undefined ? null : id(markers.toolBlock),
  };
  resolvedCache.set(tokenizer, resolved);
  return resolved;
}

/**
 * The messages of a run of prompt tokens before an output: the first prompt (`first`), or a
 * delta following an output that ended with token `last`.
 */
function contextMessages(
  ids: number[],
  first: boolean,
  last: number | undefined,
  resolved: Resolved | null,
  tokenizer: XtunerTokenizer,
): XtunerContextMessage[] {
  if (ids.length === 0) return [];
  const message = (role: XtunerRole, token_ids: number[]): XtunerContextMessage => ({
    role,
    content: tokenizer.decode(token_ids),
    token_ids,
    sampled: false,
  });
  if (resolved === null) return [message("context", ids)];
  const { markers, openers, toolBlock } = resolved;
  const starts = ids.flatMap((id, i) => openers.has(id) ? [i] : []);
  const lead = ids.slice(0, starts[0] ?? ids.length);
  const roleOf = (token_ids: readonly number[]) =>
    markers.role(tokenizer.decode(token_ids.slice(0, ROLE_PEEK_TOKENS)));
  let runs = starts.map((start, k) => {
    const token_ids = ids.slice(start, starts[k + 1] ?? ids.length);
    return { role: roleOf(token_ids), token_ids };
  });
  if (lead.length > 0) {
    if (!first && last !== undefined && openers.has(last)) {
      // The model sampled the marker that opens these tokens (GLM): they are its message.
      runs.unshift({ role: roleOf([last, ...lead.slice(0, ROLE_PEEK_TOKENS)]), token_ids: lead });
    } else if (first && markers.lead === "system") {
      runs.unshift({ role: "system", token_ids: lead });
    } else if (runs.length === 0) {
      runs.unshift({ role: "context", token_ids: lead });
    } else {
      runs[0] = { ...runs[0], token_ids: [...lead, ...runs[0].token_ids] };
    }
  }
  if (toolBlock !== null) runs = runs.flatMap((run) => splitResults(run, toolBlock));
  const header = runs.at(-1)!;
  if (header.role === "assistant" && runs.length > 1) {
    runs.pop();
    const before = runs[runs.length - 1];
    runs[runs.length - 1] = { ...before, token_ids: before.token_ids.concat(header.token_ids) };
  } else if (header.role === "assistant") {
    runs[0] = { ...header, role: "context" };
  }
  return runs.map((run) => message(run.role, run.token_ids));
}

/** A block of tool results cut into one message per result. */
function splitResults(
  run: { role: XtunerRole; token_ids: number[] },
  toolBlock: number,
): { role: XtunerRole; token_ids: number[] }[] {
  if (run.role !== "tool") return [run];
  const cuts = run.token_ids.flatMap((id, i) => id === toolBlock ? [i] : []).slice(1);
  if (cuts.length === 0) return [run];
  return [0, ...cuts].map((start, k) => ({
    role: "tool" as const,
    token_ids: run.token_ids.slice(start, cuts[k] ?? run.token_ids.length),
  }));
}
