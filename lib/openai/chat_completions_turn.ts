/**
 * Presents a validated Chat Completions request to the session layer as a protocol-neutral
 * turn, and builds the OpenAI reply from the parsed output. The conversation goes through its
 * Messages-shape translation ({@linkcode toMessagesRequest}), so routing, lowering and echo
 * identities are the Messages adapter's own; what differs is read here: sampling, output
 * options, tool-call ids and the reply.
 *
 * @module
 */
import { InvalidRequestError } from "../errors/mod.ts";
import {
  anthropicTurnInput,
  type LowerOptions,
  type MessageCreateParams,
  outputIdentity,
  settingsDigest,
} from "../anthropic/mod.ts";
import type { IdentityMemo } from "../chat/mod.ts";
import { UNTIL_CONTEXT_ENDS } from "../engine/mod.ts";
import type { AgentIds } from "../agents/mod.ts";
import type { TurnInput } from "../session/mod.ts";
import { buildChatCompletion, toolCallId } from "./build_response.ts";
import { toMessagesRequest } from "./translate.ts";
import type { ChatCompletion, ChatCompletionCreateParams, ToolChoice } from "./types.ts";

/** Who the turn belongs to and how its reply is shown. */
export interface OpenAITurnContext {
  readonly sessionId: string;
  readonly lowering?: LowerOptions;
  /** The text of one token, for `logprobs`. */
  readonly decodeToken: (id: number) => string;
  /** The client's agent ids, if it sent them. */
  readonly agent?: AgentIds;
  /** Identities of each conversation's last request, so resent messages are not built again. */
  readonly identities?: IdentityMemo;
}

/**
 * The turn a Chat Completions request asks for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openaiTurnInput } from "./chat_completions_turn.ts";
 * const input = openaiTurnInput(
 *   { model: "m", messages: [{ role: "user", content: "hi" }] },
 *   { sessionId: "sess_1", decodeToken: (id) => `<${id}>` },
 * );
 * // What the session renders for a chain's first turn (`startTurn(deps, input)` runs it).
 * assert.deepEqual(input.prompt().messages, [{ role: "user", content: "hi" }]);
 * ```
 * @throws {InvalidRequestError} for what the gateway does not serve: `n` > 1, `top_logprobs`
 * without `logprobs`, a `tool_choice` naming a tool the request does not offer, and whatever
 * {@linkcode toMessagesRequest} refuses.
 */
export function openaiTurnInput(
  request: ChatCompletionCreateParams,
  context: OpenAITurnContext,
): TurnInput<ChatCompletion> {
  checkOptions(request);
  const base = translatedTurnInput(toMessagesRequest(request, context.lowering), context);
  const stop = typeof request.stop === "string" ? [request.stop] : request.stop ?? undefined;
  const logprobs = request.logprobs === true;
  const topLogprobs = logprobs ? request.top_logprobs ?? 0 : 0;
  const tokenIds = request.return_token_ids === true;
  return {
    ...base,
    settingsIdentity: settingsIdentity(request),
    sampling: {
      maxTokens: request.max_completion_tokens ?? request.max_tokens ?? UNTIL_CONTEXT_ENDS,
      temperature: request.temperature ?? undefined,
      topP: request.top_p ?? undefined,
      topK: request.top_k ?? undefined,
      stop,
      seed: request.seed ?? undefined,
    },
    tokenData: { promptIds: tokenIds, topLogprobs },
    reply: (output) => ({
      reply: buildChatCompletion(output, {
        model: request.model,
        logprobs,
        topLogprobs,
        tokenIds,
        decodeToken: context.decodeToken,
        created: Math.floor(Date.now() / 1000),
      }),
      identity: outputIdentity(output.blocks),
    }),
  };
}

/**
 * The Messages adapter's turn over a conversation translated from an OpenAI protocol: routing,
 * lowering and echo identities are its own; nothing in the conversation is signed, so nothing is
 * verified (the gateway's own records are what it trusts); tool-call ids are `call_<hex>`. The
 * caller adds its settings identity, sampling and reply.
 */
export function translatedTurnInput(
  translated: MessageCreateParams,
  context: Pick<OpenAITurnContext, "sessionId" | "lowering" | "agent" | "identities">,
): Omit<TurnInput<unknown>, "settingsIdentity" | "sampling" | "reply"> {
  const { settingsIdentity: _settings, sampling: _sampling, reply: _reply, ...base } =
    anthropicTurnInput(translated, {
      sessionId: context.sessionId,
      signingSecret: "",
      lowering: context.lowering,
      agent: context.agent,
      identities: context.identities,
    });
  return { ...base, toolUseId: toolCallId, verifyHistory: () => {} };
}

/** The options this gateway validates beyond their shapes. */
function checkOptions(request: ChatCompletionCreateParams): void {
  if ((request.n ?? 1) > 1) {
    throw new InvalidRequestError(
      "n: only n = 1 is served; send the request n times (each answer is its own chain and sample)",
    );
  }
  if ((request.top_logprobs ?? 0) > 0 && request.logprobs !== true) {
    throw new InvalidRequestError("top_logprobs: requires logprobs to be true");
  }
  const offered = new Set((request.tools ?? []).map((tool) => tool.function.name));
  for (const name of namedTools(request.tool_choice)) {
    if (!offered.has(name)) {
      throw new InvalidRequestError(`tool_choice: names "${name}", which tools does not offer`);
    }
  }
  if (request.tool_choice === "required" && offered.size === 0) {
    throw new InvalidRequestError('tool_choice: "required" needs at least one tool in tools');
  }
}

function namedTools(choice: ToolChoice | null | undefined): string[] {
  if (!choice || typeof choice === "string") return [];
  if (choice.type === "function") return [choice.function.name];
  return choice.allowed_tools.tools.map((tool) => tool.function.name);
}

/**
 * Everything in a request but its conversation and how the answer is shown: a client that falls
 * back from streaming, or asks for logprobs or token ids again, asks the same question (and is
 * answered from the recorded turn).
 */
function settingsIdentity(request: ChatCompletionCreateParams): string {
  const {
    messages: _messages,
    stream: _stream,
    stream_options: _streamOptions,
    logprobs: _logprobs,
    top_logprobs: _topLogprobs,
    return_token_ids: _tokenIds,
    ...settings
  } = request;
  return settingsDigest({ protocol: "chat.completions", ...settings });
}
