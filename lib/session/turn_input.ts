/**
 * The contract between a protocol adapter and the session: a request as the session sees it,
 * and the parsed output handed back to build the client's reply.
 *
 * @module
 */
import type { AgentIds } from "../agents/mod.ts";
import type { ChatMessage, ChatPrompt } from "../chat/mod.ts";
import type { SamplingRequest } from "../engine/mod.ts";
import type { TurnEnd } from "../chain/mod.ts";
import type { OutputBlock, ToolSchemas } from "../output/mod.ts";

/** A request as the protocol adapter presents it to the session. */
export interface TurnInput<Reply> {
  readonly sessionId: string;
  readonly agent: AgentIds;
  /** Identity of the conversation's start (the system prompt). */
  readonly startIdentity: string;
  /** Identity of each message of the request (an assistant message's as echoes keep it). */
  readonly messageIdentities: readonly string[];
  /** Index of the last user message that asks something new (not only tool results); -1 if none. */
  readonly lastQueryIndex: number;
  /** Identity of everything else in the request (model, tools, sampling…), but `stream`. */
  readonly settingsIdentity: string;
  /** The whole conversation as the template renders it, for a chain's first turn. */
  prompt(): ChatPrompt;
  /**
   * Messages `from..` lowered, for a delta, followed by a note on how the request's tools differ
   * from `shown`, those the model was last told of: the tools withdrawn, and the definitions of
   * the tools added.
   */
  lower(from: number, shown: readonly string[]): ChatMessage[];
  /** The text of the request's opening user messages, where a sub-agent's task would be. */
  firstUserText(): string;
  /** The id the client was given for tool call `index` of the turn `rid`. */
  toolUseId(rid: string, index: number): string;
  /** Checks history the gateway did not record itself, before it starts a chain. */
  verifyHistory(): void;
  /**
   * The bytes (base64) of an image the request holds, by digest: where a turn finds the bytes of
   * its history's images when this process has not seen them. Absent without images.
   */
  imageData?(digest: string): string | undefined;
  readonly enableThinking?: boolean;
  readonly toolNames: readonly string[];
  /** The offered tools' parameter schemas, by name (formats that type values read them). */
  readonly toolSchemas: ToolSchemas;
  readonly sampling: SamplingRequest;
  readonly model: string;
  /**
   * Token data the reply shows beyond the parsed output: the whole prompt's ids (OpenAI's
   * `return_token_ids`), and the engine's `topLogprobs` most likely tokens at each position.
   */
  readonly tokenData?: { readonly promptIds?: boolean; readonly topLogprobs?: number };
  /** Builds the client's reply from the parsed output, and that reply's message identity. */
  reply(output: TurnOutput): { reply: Reply; identity: string };
}

/** The parsed result of a turn, handed to the adapter to build its reply. */
export interface TurnOutput {
  readonly rid: string;
  readonly blocks: readonly OutputBlock[];
  readonly end: TurnEnd;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** The sampled tokens (the end-of-turn token included) and the engine's logprob of each. */
  readonly outputIds: ArrayLike<number>;
  readonly logprobs: ArrayLike<number>;
  /**
   * At each output position, the engine's most likely tokens as `[id, logprob]`, when
   * `tokenData.topLogprobs` asked for them. Not recorded: a replay has none.
   */
  readonly topLogprobs?: readonly (readonly (readonly [number, number])[])[];
  /** The whole prompt the engine read, when `tokenData.promptIds` asked for it. */
  readonly promptIds?: readonly number[];
}
