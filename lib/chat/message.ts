/**
 * Canonical chat messages: the protocol-neutral form every client request is lowered to and
 * the model's chat template renders (the OpenAI/Hugging Face message shape).
 *
 * @module
 */

/** A tool call inside an assistant message; `arguments` stays an object, as HF templates expect. */
export interface ChatToolCall {
  readonly id?: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: Record<string, unknown> };
}

/** One message as the chat template sees it. */
export type ChatMessage =
  | { readonly role: "system"; readonly content: string }
  | { readonly role: "user"; readonly content: string }
  | {
    readonly role: "assistant";
    readonly content: string;
    /** Reasoning text; templates decide whether earlier turns keep it. */
    readonly reasoning_content?: string;
    readonly tool_calls?: readonly ChatToolCall[];
  }
  | {
    readonly role: "tool";
    readonly content: string;
    readonly tool_call_id?: string;
    /** The tool whose call this answers, when known; templates that label results read it. */
    readonly name?: string;
  };

/** A tool offered to the model, in the function-calling shape chat templates render. */
export interface ChatTool {
  readonly type: "function";
  readonly function: {
    readonly name: string;
    readonly description?: string;
    readonly parameters: Record<string, unknown>;
  };
}

/** A whole prompt before rendering: the conversation, the tools and template switches. */
export interface ChatPrompt {
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ChatTool[];
  /** `false` asks a hybrid-reasoning template to close thinking; `undefined` keeps its default. */
  readonly enableThinking?: boolean;
}
