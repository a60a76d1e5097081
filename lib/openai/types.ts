/**
 * OpenAI Chat Completions as the gateway accepts and answers it (reference
 * anthropic-openai-api.md §3): zod schemas for requests (unknown fields tolerated, as clients
 * send many) and types for responses, with the vLLM/SGLang token-id extension.
 *
 * @module
 */
import { z } from "zod";
import {
  MAX_MODEL_CHARS,
  MAX_STOP_SEQUENCE_CHARS,
  MAX_STOP_SEQUENCES,
  MAX_TOOL_NAME_CHARS,
  MAX_TOOLS,
} from "../limits/mod.ts";

const TextPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const RefusalPart = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });
const ImagePart = z.looseObject({ type: z.literal("image_url"), image_url: z.unknown() });
const AudioPart = z.looseObject({ type: z.literal("input_audio"), input_audio: z.unknown() });
const FilePart = z.looseObject({ type: z.literal("file"), file: z.unknown() });

const UserPart = z.discriminatedUnion("type", [TextPart, ImagePart, AudioPart, FilePart]);
export type UserPart = z.infer<typeof UserPart>;

/** Text content: a string or text parts (system, developer and tool messages). */
const TextContent = z.union([z.string(), z.array(TextPart)]);

export const ToolCallParam = z.looseObject({
  id: z.string().min(1),
  type: z.literal("function"),
  function: z.looseObject({
    name: z.string().min(1).max(MAX_TOOL_NAME_CHARS),
    /** JSON text of an object, as the model wrote it; `""` for a call without arguments. */
    arguments: z.string(),
  }),
});
export type ToolCallParam = z.infer<typeof ToolCallParam>;

const SystemMessage = z.looseObject({
  role: z.enum(["system", "developer"]),
  content: TextContent,
});
const UserMessage = z.looseObject({
  role: z.literal("user"),
  content: z.union([z.string(), z.array(UserPart)]),
});
const AssistantMessage = z.looseObject({
  role: z.literal("assistant"),
  content: z.union([z.string(), z.array(z.discriminatedUnion("type", [TextPart, RefusalPart]))])
    .nullish(),
  /** Reasoning as SGLang and vLLM return it; clients may echo it or drop it. */
  reasoning_content: z.string().nullish(),
  /** vLLM's newer name for the same. */
  reasoning: z.string().nullish(),
  tool_calls: z.array(ToolCallParam).nullish(),
  refusal: z.string().nullish(),
});
const ToolMessage = z.looseObject({
  role: z.literal("tool"),
  tool_call_id: z.string().min(1),
  content: TextContent,
});
const FunctionMessage = z.looseObject({ role: z.literal("function") });

export const ChatMessageParam = z.discriminatedUnion("role", [
  SystemMessage,
  UserMessage,
  AssistantMessage,
  ToolMessage,
  FunctionMessage,
]);
export type ChatMessageParam = z.infer<typeof ChatMessageParam>;

export const FunctionTool = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({
    name: z.string().min(1).max(MAX_TOOL_NAME_CHARS),
    description: z.string().optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
    strict: z.boolean().nullish(),
  }),
});
export type FunctionTool = z.infer<typeof FunctionTool>;

const NamedToolChoice = z.looseObject({
  type: z.literal("function"),
  function: z.looseObject({ name: z.string().min(1) }),
});
const AllowedToolsChoice = z.looseObject({
  type: z.literal("allowed_tools"),
  allowed_tools: z.looseObject({
    mode: z.enum(["auto", "required"]),
    tools: z.array(NamedToolChoice),
  }),
});
export const ToolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  NamedToolChoice,
  AllowedToolsChoice,
]);
export type ToolChoice = z.infer<typeof ToolChoice>;

const ResponseFormat = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("text") }),
  z.looseObject({ type: z.literal("json_object") }),
  z.looseObject({
    type: z.literal("json_schema"),
    json_schema: z.looseObject({
      name: z.string().min(1).max(64),
      schema: z.record(z.string(), z.unknown()).optional(),
    }),
  }),
]);

const Stop = z.union([
  z.string().max(MAX_STOP_SEQUENCE_CHARS),
  z.array(z.string().max(MAX_STOP_SEQUENCE_CHARS)).max(MAX_STOP_SEQUENCES),
]);

/** `POST /v1/chat/completions` body. */
export const ChatCompletionCreateParams = z.looseObject({
  model: z.string().min(1).max(MAX_MODEL_CHARS),
  messages: z.array(ChatMessageParam).min(1).max(100_000),
  tools: z.array(FunctionTool).max(MAX_TOOLS).nullish(),
  tool_choice: ToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  response_format: ResponseFormat.nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({
    include_usage: z.boolean().nullish(),
    include_obfuscation: z.boolean().nullish(),
  }).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
  stop: Stop.nullish(),
  max_tokens: z.number().int().min(0).nullish(),
  max_completion_tokens: z.number().int().min(0).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  /** SGLang's and vLLM's extension. */
  top_k: z.number().int().min(-1).nullish(),
  seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).nullish(),
  n: z.number().int().min(1).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  /** vLLM's extension: `prompt_token_ids` and `choices[].token_ids` in the response. */
  return_token_ids: z.boolean().nullish(),
  /** SGLang's and vLLM's template switches; `enable_thinking` is the one the gateway reads. */
  chat_template_kwargs: z.looseObject({ enable_thinking: z.boolean().optional() }).nullish(),
});
export type ChatCompletionCreateParams = z.infer<typeof ChatCompletionCreateParams>;

/** A tool call of a response message: arguments as JSON text. */
export interface ToolCall {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
}

/** One token's log-probability, in OpenAI's shape. */
export interface TokenLogprob {
  token: string;
  logprob: number;
  /** UTF-8 bytes of `token`; `null` when the token is part of a character. */
  bytes: number[] | null;
  top_logprobs: { token: string; logprob: number; bytes: number[] | null }[];
}

/** Why the model stopped, in OpenAI's words. */
export type FinishReason = "stop" | "length" | "tool_calls";

/** Token counts; `prompt_tokens` is the whole prompt the engine read. */
export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
}

/** The assistant message of a choice. */
export interface ResponseMessage {
  role: "assistant";
  content: string | null;
  refusal: null;
  /** The model's reasoning (SGLang's field name), when it thought. */
  reasoning_content?: string;
  tool_calls?: ToolCall[];
}

/** One choice (the gateway answers one). */
export interface Choice {
  index: number;
  message: ResponseMessage;
  logprobs: { content: TokenLogprob[]; refusal: null } | null;
  finish_reason: FinishReason;
  /** The sampled token ids, when `return_token_ids` asked for them. */
  token_ids?: number[];
}

/** A response (`object: "chat.completion"`). */
export interface ChatCompletion {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: Choice[];
  usage: CompletionUsage;
  /** The prompt's token ids, when `return_token_ids` asked for them. */
  prompt_token_ids?: number[];
}

/** One streamed chunk (`object: "chat.completion.chunk"`). */
export interface ChatCompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: {
    index: number;
    delta: {
      role?: "assistant";
      content?: string;
      reasoning_content?: string;
      tool_calls?: {
        index: number;
        id?: string;
        type?: "function";
        function: { name?: string; arguments: string };
      }[];
    };
    logprobs: { content: TokenLogprob[]; refusal: null } | null;
    finish_reason: FinishReason | null;
    token_ids?: number[];
  }[];
  usage?: CompletionUsage | null;
  prompt_token_ids?: number[];
}
