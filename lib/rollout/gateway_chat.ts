/**
 * The environment loop's model: Chat Completions on this gateway, with the episode session's
 * token, like any agent. The gateway records each turn as it would an agent's; the loop echoes
 * every assistant message back exactly as it was answered, so the chain only ever grows.
 *
 * @module
 */

import { sleep } from "../timing/mod.ts";

/** A Chat Completions message as the loop sends it. */
export type ChatMessage = Readonly<Record<string, unknown>> & { readonly role: string };

/** A tool call of an assistant message. */
export interface ChatToolCall {
  readonly id: string;
  readonly function: { readonly name: string; readonly arguments: string };
}

/** One turn's answer. */
export interface ChatReply {
  /** The assistant message, as answered: sent back whole in the next turn's history. */
  readonly message: ChatMessage;
  readonly content: string;
  readonly toolCalls: readonly ChatToolCall[];
}

/** The model could not answer a turn (the engine is down, the context is full, …). */
export class ModelError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = "ModelError";
  }
}

/** A chat model the loop talks to. */
export interface ChatModel {
  /** One turn. @throws {ModelError} */
  complete(
    messages: readonly ChatMessage[],
    tools: readonly unknown[],
    signal?: AbortSignal,
  ): Promise<ChatReply>;
}

/** Where the gateway is, and how each turn samples. */
export interface GatewayChatOptions {
  /** The gateway's base URL (without `/v1`). */
  readonly baseUrl: string;
  /** The session's token. */
  readonly token: string;
  readonly model: string;
  readonly sampling: {
    readonly temperature?: number;
    readonly top_p?: number;
    readonly max_tokens?: number;
  };
  /** Tries again of a turn the gateway asks to retry (an overloaded or starting engine). */
  readonly retries?: number;
}

/** Tries again of a turn the gateway asks to retry, by default. */
const RETRIES = 3;
/** Longest wait before trying again, whatever `retry-after-ms` says. */
const MAX_RETRY_WAIT_MS = 10_000;

/**
 * Chat Completions on the gateway.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildDeps } from "../../functions/_deps.ts";
 * import { createGatewayApp } from "../../functions/serve.ts";
 * import { resolveConfig } from "../config/mod.ts";
 * import { openSession } from "../session/mod.ts";
 * import { gatewayChat } from "./gateway_chat.ts";
 * // A gateway in this process, answered by the built-in scripted engine.
 * const deps = await buildDeps(resolveConfig({ KV_PATH: ":memory:" }));
 * const server = Deno.serve({ port: 0, onListen() {} }, createGatewayApp(deps).fetch);
 * const { token } = await openSession(deps.kv);
 * const baseUrl = `http://127.0.0.1:${server.addr.port}`;
 * const model = gatewayChat({ baseUrl, token, model: "qwen3", sampling: {} });
 * const reply = await model.complete([{ role: "user", content: "Hi" }], []);
 * assert.ok(reply);
 * await server.shutdown();
 * await deps.close();
 * ```
 */
export function gatewayChat(options: GatewayChatOptions): ChatModel {
  return {
    async complete(messages, tools, signal) {
      const body = JSON.stringify({
        model: options.model,
        messages,
        ...(tools.length > 0 ? { tools } : {}),
        ...options.sampling,
      });
      for (let attempt = 0;; attempt++) {
        const response = await fetch(`${options.baseUrl}/v1/chat/completions`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${options.token}`,
          },
          body,
          signal,
        });
        // As the SDKs do: the gateway says when a failure is worth another try, and how soon.
        if (
          response.headers.get("x-should-retry") === "true" &&
          attempt < (options.retries ?? RETRIES)
        ) {
          await response.body?.cancel();
          const wait = Number(response.headers.get("retry-after-ms") ?? 1000);
          await sleep(Math.min(Number.isFinite(wait) ? wait : 1000, MAX_RETRY_WAIT_MS), signal);
          continue;
        }
        return await replyOf(response);
      }
    },
  };
}

/** The turn's reply from the gateway's answer. @throws {ModelError} */
async function replyOf(response: Response): Promise<ChatReply> {
  // deno-lint-ignore no-explicit-any
  const body: any = await response.json().catch(() => null);
  if (!response.ok) {
    const message = typeof body?.error?.message === "string"
      ? body.error.message
      : `HTTP ${response.status}`;
    throw new ModelError(response.status, message);
  }
  const choice = body?.choices?.[0];
  const message = choice?.message;
  if (!message || typeof message !== "object") {
    throw new ModelError(response.status, "The gateway answered no message");
  }
  const toolCalls: ChatToolCall[] = Array.isArray(message.tool_calls)
    // A call is answered by its id: one without an id, or a name, is not a call to play.
    ? message.tool_calls.filter((call: ChatToolCall) =>
      typeof call?.id === "string" && typeof call?.function?.name === "string"
    )
    : [];
  return {
    message,
    content: typeof message.content === "string" ? message.content : "",
    toolCalls,
  };
}
