/**
 * The contract between a protocol adapter and the session: a request as the session sees it,
 * and the parsed output handed back to build the client's reply.
 *
 * @module
 */
import type { ChatMessage, ChatPrompt } from "../chat/mod.ts";
import type { SamplingRequest } from "../engine/mod.ts";
import type { TurnEnd } from "../chain/mod.ts";
import type { OutputBlock } from "../template/mod.ts";

/** A request as the protocol adapter presents it to the session. */
export interface TurnInput<Reply> {
  readonly sessionId: string;
  /** Identity of the conversation's start (system prompt and tools). */
  readonly startIdentity: string;
  /** Identity of each message of the request. */
  readonly messageIdentities: readonly string[];
  /** Identity of everything else in the request (model, sampling, thinking…), but `stream`. */
  readonly settingsIdentity: string;
  /** The whole conversation as the template renders it, for a chain's first turn. */
  prompt(): ChatPrompt;
  /** Messages `from..` lowered, for a delta. */
  lower(from: number): ChatMessage[];
  /** Checks history the gateway did not record itself, before it starts a chain. */
  verifyHistory(): void;
  readonly enableThinking?: boolean;
  readonly toolNames: readonly string[];
  readonly sampling: SamplingRequest;
  readonly model: string;
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
}
