/**
 * Presents a validated Messages request to the session layer as a protocol-neutral turn, and
 * builds the Anthropic reply from the parsed output.
 *
 * @module
 */
import { InvalidRequestError } from "../errors/mod.ts";
import type { ChatMessage, ChatTool, IdentityMemo } from "../chat/mod.ts";
import type { AgentIds } from "../agents/mod.ts";
import type { TurnInput, TurnOutput } from "../session/mod.ts";
import { buildMessage, type Finish, toolUseId } from "./build_response.ts";
import { messageIdentities, outputIdentity, settingsDigest, startIdentity } from "./identity.ts";
import { derivedOnce } from "../cache/mod.ts";
import {
  checkImageCount,
  DEFAULT_LOWER_OPTIONS,
  lowerMessages,
  type LowerOptions,
  lowerSystem,
  lowerThinking,
  lowerTools,
} from "./lower_request.ts";
import { signThinking, verifyThinking } from "./signature.ts";
import { probeImageOf } from "../vision/mod.ts";
import type { Message, MessageCreateParams } from "./types.ts";

/** Who the turn belongs to, how its thinking blocks are signed, and how it is lowered. */
export interface AnthropicTurnContext {
  readonly sessionId: string;
  readonly signingSecret: string;
  readonly lowering?: LowerOptions;
  /** The client's agent ids (Claude Code's `x-claude-code-agent-id` and parent), if sent. */
  readonly agent?: AgentIds;
  /** Identities of each conversation's last request, so resent messages are not built again. */
  readonly identities?: IdentityMemo;
}

/**
 * The turn a Messages request asks for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { anthropicTurnInput } from "./messages_turn.ts";
 * const input = anthropicTurnInput(
 *   { model: "m", max_tokens: 64, messages: [{ role: "user", content: "hi" }] },
 *   { sessionId: "sess_1", signingSecret: "secret-secret-secret" },
 * );
 * // What the session renders for a chain's first turn (`startTurn(deps, input)` runs it).
 * assert.deepEqual(input.prompt().messages, [{ role: "user", content: "hi" }]);
 * assert.equal(input.messageIdentities.length, 1);
 * ```
 * @throws {InvalidRequestError} for an assistant prefill, which the gateway does not serve.
 */
export function anthropicTurnInput(
  request: MessageCreateParams,
  context: AnthropicTurnContext,
): TurnInput<Message> {
  const last = request.messages.at(-1)!;
  if (last.role === "assistant") {
    throw new InvalidRequestError(
      `messages.${
        request.messages.length - 1
      }: the last message must not be an assistant message (prefill is not supported)`,
    );
  }
  if (context.lowering?.images === "vision" && context.lowering.vision) {
    checkImageCount(request.messages, context.lowering.vision.limits.maxImages);
  }
  const { text: system, identity: start } = systemOf(request.system, context.lowering);
  // Held tools (`RecurringFields`) are lowered once, and their settings digest looked up by token.
  const tools = request.tools ? derivedOnce(request.tools, lowerTools) : [];
  const sign = (thinking: string) =>
    signThinking(context.signingSecret, context.sessionId, thinking);
  return {
    sessionId: context.sessionId,
    agent: context.agent ?? { id: null, parentId: null },
    startIdentity: start,
    messageIdentities: context.identities
      ? context.identities.identities(
        conversationKey(context.sessionId, context.agent?.id ?? null),
        request.messages,
        (known) => messageIdentities(request.messages, known),
      )
      : messageIdentities(request.messages),
    lastQueryIndex: lastQueryIndex(request),
    settingsIdentity: settingsIdentity(request, tools),
    prompt: () => ({
      messages: [
        ...(system.length > 0 ? [{ role: "system" as const, content: system }] : []),
        ...lowerMessages(request.messages, 0, context.lowering),
      ] satisfies ChatMessage[],
      tools,
      enableThinking: lowerThinking(request.thinking),
    }),
    lower: (from, shown) => {
      const note = toolsNote(tools, shown);
      return lowerMessages(
        note === null
          ? request.messages.slice(from)
          : [...request.messages.slice(from), { role: "system", content: note }],
        from,
        context.lowering,
        request.messages[from - 1],
      );
    },
    firstUserText: () => firstUserText(request),
    toolUseId,
    verifyHistory: () => verifySignatures(request, context),
    ...(context.lowering?.images === "vision" && context.lowering.vision
      ? { imageData: requestImages(request) }
      : {}),
    enableThinking: lowerThinking(request.thinking),
    toolNames: tools.map((tool) => tool.function.name),
    toolSchemas: new Map(tools.map((tool) => [tool.function.name, tool.function.parameters])),
    sampling: {
      maxTokens: request.max_tokens,
      temperature: request.temperature,
      topP: request.top_p,
      topK: request.top_k,
      stop: request.stop_sequences,
    },
    model: request.model,
    reply: (output) => {
      const message = buildMessage({
        rid: output.rid,
        model: request.model,
        blocks: output.blocks,
        finish: finishOf(output),
        usage: usage(output.inputTokens, output.outputTokens),
        sign,
      });
      return { reply: message, identity: outputIdentity(output.blocks) };
    },
  };
}

/**
 * The message as `message_start` announces it, before anything is generated.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { messageHead } from "./messages_turn.ts";
 * const head = messageHead("0123456789abcdef", "qwen3", 12);
 * assert.deepEqual(head.content, []);
 * assert.equal(head.usage.input_tokens, 12);
 * ```
 */
export function messageHead(rid: string, model: string, inputTokens: number): Message {
  return {
    id: `msg_${rid}`,
    type: "message",
    role: "assistant",
    model,
    content: [],
    stop_reason: "end_turn",
    stop_sequence: null,
    usage: usage(inputTokens, 0),
  };
}

/**
 * The reply to a request for no tokens (`max_tokens: 0`): nothing sampled, nothing recorded,
 * stopped at its limit.
 */
export function unsampledMessage(rid: string, model: string, inputTokens: number): Message {
  return { ...messageHead(rid, model, inputTokens), stop_reason: "max_tokens" };
}

/** The system text the model sees, and the identity of a conversation's start from it. */
function systemOf(
  system: MessageCreateParams["system"],
  lowering: LowerOptions | undefined,
): { readonly text: string; readonly identity: string } {
  const lower = lowering?.keepAttribution ? systemKept : systemDropped;
  // A held system prompt (`RecurringFields`) is lowered once.
  return typeof system === "object" ? derivedOnce(system, lower) : lower(system);
}

function systemKept(system: MessageCreateParams["system"]) {
  const text = lowerSystem(system, { ...DEFAULT_LOWER_OPTIONS, keepAttribution: true });
  return { text, identity: startIdentity(text) };
}

function systemDropped(system: MessageCreateParams["system"]) {
  const text = lowerSystem(system, { ...DEFAULT_LOWER_OPTIONS, keepAttribution: false });
  return { text, identity: startIdentity(text) };
}

/**
 * Everything in a request but its conversation: model, sampling, thinking, tool choice and the
 * rest. `stream` is left out, since a client falling back from streaming to JSON asks the same
 * question; `cache_control` too, as everywhere.
 */
function settingsIdentity(request: MessageCreateParams, tools: readonly ChatTool[]): string {
  const {
    messages: _messages,
    system: _system,
    tools: _tools,
    stream: _stream,
    cache_control: _cache,
    ...settings
  } = request;
  return settingsDigest({ ...settings, tools });
}

/**
 * What the model reads when a request's tools differ from those its chain last showed it
 * (`shown`), as a system reminder in the delta, so the history before stays as it was sampled:
 * the tools withdrawn, by name (a removed or renamed tool must not be called), and the
 * definitions of the tools added (Claude Code and Qwen Code load deferred tools
 * mid-conversation). `null` when the tools are the same.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { toolsNote } from "./messages_turn.ts";
 * const tool = (name: string) => ({ type: "function" as const, function: { name, parameters: {} } });
 * assert.equal(toolsNote([tool("Bash")], ["Bash"]), null);
 * assert.equal(
 *   toolsNote([tool("Shell")], ["Bash"]),
 *   'These tools are no longer available: "Bash". Do not call them.\n' +
 *     "These tools are available from now on:\n<tools>\n" +
 *     '{"type":"function","function":{"name":"Shell","parameters":{}}}\n</tools>',
 * );
 * ```
 */
export function toolsNote(tools: readonly ChatTool[], shown: readonly string[]): string | null {
  const offered = new Set(tools.map((tool) => tool.function.name));
  const known = new Set(shown);
  const added = tools.filter((tool) => !known.has(tool.function.name));
  const withdrawn = [...known].filter((name) => !offered.has(name));
  if (added.length === 0 && withdrawn.length === 0) return null;
  const definitions = added.map((tool) => JSON.stringify(tool)).join("\n");
  if (withdrawn.length === 0) {
    return `These tools are available from now on, in addition to those listed before:\n<tools>\n${definitions}\n</tools>`;
  }
  const names = withdrawn.map((name) => JSON.stringify(name)).join(", ");
  const gone = `These tools are no longer available: ${names}. Do not call them.`;
  return added.length === 0
    ? gone
    : `${gone}\nThese tools are available from now on:\n<tools>\n${definitions}\n</tools>`;
}

/**
 * The index of the last user message that asks something (text, not only tool results): the
 * query after which templates such as Qwen3's drop earlier reasoning; -1 when there is none.
 */
function lastQueryIndex(request: MessageCreateParams): number {
  return request.messages.findLastIndex((message) =>
    message.role === "user" &&
    (typeof message.content === "string" ||
      message.content.some((block) => block.type !== "tool_result"))
  );
}

/**
 * The text of the user messages before the first assistant message, joined by newlines: where a
 * sub-agent finds its task (Claude Code's and Qwen Code's in their first message; Codex's after a
 * message of environment context).
 */
function firstUserText(request: MessageCreateParams): string {
  const texts: string[] = [];
  for (const message of request.messages) {
    if (message.role === "assistant") break;
    if (message.role !== "user") continue;
    if (typeof message.content === "string") texts.push(message.content);
    else {
      for (const block of message.content) if (block.type === "text") texts.push(block.text);
    }
  }
  return texts.join("\n");
}

function usage(inputTokens: number, outputTokens: number): Message["usage"] {
  return {
    input_tokens: inputTokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
}

function finishOf(output: TurnOutput): Finish {
  switch (output.end.reason) {
    case "end_of_turn":
      return { kind: "end_of_turn" };
    case "length":
      return { kind: "length" };
    case "stop_sequence":
      return { kind: "stop_sequence", matched: output.end.stopSequence ?? "" };
  }
}

/** Thinking blocks in history the gateway did not record must carry its signature. */
function verifySignatures(request: MessageCreateParams, context: AnthropicTurnContext): void {
  request.messages.forEach((message, i) => {
    if (message.role !== "assistant" || typeof message.content === "string") return;
    message.content.forEach((block, j) => {
      if (
        block.type === "thinking" &&
        !verifyThinking(context.signingSecret, context.sessionId, block.thinking, block.signature)
      ) {
        throw new InvalidRequestError(
          `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`,
        );
      }
    });
  });
}

/** Limits that refuse no image: for history already accepted. */
const UNBOUNDED = { maxBytes: Infinity, maxPixels: Infinity };

/**
 * Finds a request's images by digest, probing them (decode and hash) on the first look only:
 * what a turn reads when its process has not seen the images of its history.
 */
function requestImages(request: MessageCreateParams): (digest: string) => string | undefined {
  let byDigest: Map<string, string> | null = null;
  return (digest) => {
    if (byDigest === null) {
      byDigest = new Map();
      const look = (block: { type: string; source?: unknown }) => {
        const source = block.source as { type?: unknown; data?: unknown } | undefined;
        if (block.type !== "image" || source?.type !== "base64") return;
        if (typeof source.data !== "string") return;
        try {
          // Unbounded here: these were taken under the bounds of their own turn (which a restart
          // may since have lowered); the request body's bound bounds the work.
          const image = probeImageOf(source, source.data, UNBOUNDED);
          byDigest!.set(image.digest, image.base64);
        } catch {
          // An image the lowering refuses is not in any chain.
        }
      };
      for (const message of request.messages) {
        if (typeof message.content === "string") continue;
        for (const block of message.content) {
          look(block);
          if (block.type === "tool_result" && Array.isArray(block.content)) {
            for (const inner of block.content) look(inner as { type: string });
          }
        }
      }
    }
    return byDigest.get(digest);
  };
}

/** The identity memo's key of a conversation: its session's, and its agent's (a sub-agent's own). */
export function conversationKey(sessionId: string, agentId: string | null): string {
  return `${sessionKeyPrefix(sessionId)}${agentId ?? ""}`;
}

/** What every conversation key of session `sessionId` starts with (to forget them together). */
export function sessionKeyPrefix(sessionId: string): string {
  return `${sessionId}\n`;
}
