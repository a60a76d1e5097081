/**
 * Presents a validated Responses API request to the session layer as a protocol-neutral turn,
 * and builds the response object from the parsed output. The conversation goes through its
 * Messages-shape translation ({@linkcode toMessagesRequest}), so routing, lowering and echo
 * identities are the Messages adapter's own; what differs is read here: sampling, the options
 * this gateway refuses, call ids and the response.
 *
 * @module
 */
import { InvalidRequestError } from "../errors/mod.ts";
import { type LowerOptions, outputIdentity, settingsDigest } from "../anthropic/mod.ts";
import type { IdentityMemo } from "../chat/mod.ts";
import { translatedTurnInput } from "../openai/mod.ts";
import { UNTIL_CONTEXT_ENDS } from "../engine/mod.ts";
import type { AgentIds } from "../agents/mod.ts";
import type { TurnInput } from "../session/mod.ts";
import { buildResponse } from "./build_response.ts";
import { offeredFunctions } from "./offered_functions.ts";
import { toMessagesRequest } from "./translate.ts";
import type { ResponseCreateParams, ResponseObject } from "./types.ts";

/** Who the turn belongs to and how its conversation is lowered. */
export interface ResponsesTurnContext {
  readonly sessionId: string;
  readonly lowering?: LowerOptions;
  /** The client's agent ids, if it sent them. */
  readonly agent?: AgentIds;
  /** Identities of each conversation's last request, so resent messages are not built again. */
  readonly identities?: IdentityMemo;
}

/**
 * The turn a Responses API request asks for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { responsesTurnInput } from "./responses_turn.ts";
 * const input = responsesTurnInput({ model: "m", input: "hi" }, { sessionId: "sess_1" });
 * // What the session renders for a chain's first turn (`startTurn(deps, input)` runs it).
 * assert.deepEqual(input.prompt().messages, [{ role: "user", content: "hi" }]);
 * ```
 * @throws {InvalidRequestError} for what the gateway does not serve: `previous_response_id`
 * and `conversation` (it keeps no responses by id: send the whole input), `background`, a
 * `tool_choice` naming a tool the request does not offer, and whatever
 * {@linkcode toMessagesRequest} refuses.
 */
export function responsesTurnInput(
  request: ResponseCreateParams,
  context: ResponsesTurnContext,
): TurnInput<ResponseObject> {
  checkOptions(request);
  const base = translatedTurnInput(toMessagesRequest(request, context.lowering), context);
  return {
    ...base,
    settingsIdentity: settingsIdentity(request),
    sampling: {
      maxTokens: request.max_output_tokens ?? UNTIL_CONTEXT_ENDS,
      temperature: request.temperature ?? undefined,
      topP: request.top_p ?? undefined,
    },
    reply: (output) => ({
      reply: buildResponse(output, request, Math.floor(Date.now() / 1000)),
      identity: outputIdentity(output.blocks),
    }),
  };
}

/** The options this gateway refuses or validates beyond their shapes. */
function checkOptions(request: ResponseCreateParams): void {
  if (request.previous_response_id) {
    throw new InvalidRequestError(
      "previous_response_id: not supported: the gateway keeps no responses by id; send the whole conversation in input (store: false)",
    );
  }
  if (request.conversation !== undefined && request.conversation !== null) {
    throw new InvalidRequestError(
      "conversation: not supported: the gateway keeps no conversations by id; send the whole conversation in input",
    );
  }
  if (request.background === true) {
    throw new InvalidRequestError(
      "background: not supported: send the request and wait for it (or stream it)",
    );
  }
  const offered = new Set(offeredFunctions(request.tools).functions.map((tool) => tool.name));
  const choice = request.tool_choice;
  if (choice && typeof choice === "object") {
    const named = choice.type === "function"
      ? [(choice as { name: string }).name]
      : choice.type === "allowed_tools"
      ? (choice as { tools: { name?: string }[] }).tools.flatMap((tool) =>
        tool.name ? [tool.name] : []
      )
      : null;
    if (named === null) {
      throw new InvalidRequestError(
        `tool_choice.type: "${choice.type}" is not supported; choose a function tool`,
      );
    }
    for (const name of named) {
      if (!offered.has(name)) {
        throw new InvalidRequestError(`tool_choice: names "${name}", which tools does not offer`);
      }
    }
  }
  if (choice === "required" && offered.size === 0) {
    throw new InvalidRequestError('tool_choice: "required" needs at least one tool in tools');
  }
}

/**
 * Everything in a request but its conversation and how the answer is shown or kept: a client
 * that falls back from streaming asks the same question (and is answered from the recorded
 * turn).
 */
function settingsIdentity(request: ResponseCreateParams): string {
  const {
    input: _input,
    stream: _stream,
    store: _store,
    include: _include,
    metadata: _metadata,
    ...settings
  } = request;
  return settingsDigest({ protocol: "responses", ...settings });
}
