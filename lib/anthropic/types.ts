/**
 * The Anthropic Messages API as the gateway accepts and answers it: zod schemas for requests
 * (unknown fields tolerated, as clients send many) and types for responses.
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

export const TextBlockParam = z.looseObject({ type: z.literal("text"), text: z.string() });
const ImageBlockParam = z.looseObject({ type: z.literal("image"), source: z.unknown() });
const DocumentBlockParam = z.looseObject({ type: z.literal("document"), source: z.unknown() });
const SearchResultBlockParam = z.looseObject({ type: z.literal("search_result") });
const ToolReferenceBlockParam = z.looseObject({
  type: z.literal("tool_reference"),
  tool_name: z.string(),
});
export const ThinkingBlockParam = z.looseObject({
  type: z.literal("thinking"),
  thinking: z.string(),
  signature: z.string(),
});
const RedactedThinkingBlockParam = z.looseObject({
  type: z.literal("redacted_thinking"),
  data: z.string(),
});
export const ToolUseBlockParam = z.looseObject({
  type: z.literal("tool_use"),
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});
const ToolResultContent = z.discriminatedUnion("type", [
  TextBlockParam,
  ImageBlockParam,
  DocumentBlockParam,
  SearchResultBlockParam,
  ToolReferenceBlockParam,
]);
export const ToolResultBlockParam = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: z.union([z.string(), z.array(ToolResultContent)]).optional(),
  is_error: z.boolean().optional(),
});
/** Mid-conversation system content (`mid_conv_system`), text blocks inside. */
const MidConversationSystemBlockParam = z.looseObject({
  type: z.literal("mid_conv_system"),
  content: z.array(TextBlockParam),
});

export const ContentBlockParam = z.discriminatedUnion("type", [
  TextBlockParam,
  ImageBlockParam,
  DocumentBlockParam,
  SearchResultBlockParam,
  ThinkingBlockParam,
  RedactedThinkingBlockParam,
  ToolUseBlockParam,
  ToolResultBlockParam,
  MidConversationSystemBlockParam,
]);
export type ContentBlockParam = z.infer<typeof ContentBlockParam>;

export const MessageParam = z.looseObject({
  role: z.enum(["user", "assistant", "system"]),
  content: z.union([z.string(), z.array(ContentBlockParam)]),
});
export type MessageParam = z.infer<typeof MessageParam>;

export const ToolParam = z.looseObject({
  name: z.string().min(1).max(MAX_TOOL_NAME_CHARS),
  description: z.string().optional(),
  /** Absent on Anthropic server tools (`type: "web_search_…"`), which the gateway drops. */
  input_schema: z.record(z.string(), z.unknown()).optional(),
  type: z.string().optional(),
});
export type ToolParam = z.infer<typeof ToolParam>;

const ToolChoice = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("auto"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({ type: z.literal("any"), disable_parallel_tool_use: z.boolean().optional() }),
  z.looseObject({
    type: z.literal("tool"),
    name: z.string(),
    disable_parallel_tool_use: z.boolean().optional(),
  }),
  z.looseObject({ type: z.literal("none") }),
]);

const ThinkingConfig = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("enabled"), budget_tokens: z.number().int().optional() }),
  z.looseObject({ type: z.literal("adaptive") }),
  z.looseObject({ type: z.literal("disabled") }),
]);

/** `POST /v1/messages` body. */
export const MessageCreateParams = z.looseObject({
  model: z.string().min(1).max(MAX_MODEL_CHARS),
  max_tokens: z.number().int().min(0),
  messages: z.array(MessageParam).min(1).max(100_000),
  system: z.union([z.string(), z.array(TextBlockParam)]).optional(),
  stop_sequences: z.array(z.string().max(MAX_STOP_SEQUENCE_CHARS)).max(MAX_STOP_SEQUENCES)
    .optional(),
  stream: z.boolean().optional(),
  temperature: z.number().min(0).max(2).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  top_k: z.number().int().min(-1).optional(),
  tools: z.array(ToolParam).max(MAX_TOOLS).optional(),
  tool_choice: ToolChoice.optional(),
  thinking: ThinkingConfig.optional(),
  metadata: z.looseObject({}).optional(),
});
export type MessageCreateParams = z.infer<typeof MessageCreateParams>;

/** `POST /v1/messages/count_tokens` body: a message request without output settings. */
export const MessageCountTokensParams = MessageCreateParams.extend({
  max_tokens: z.number().int().min(0).optional(),
});

/** Why the model stopped, in Anthropic's words. */
export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";

/** A content block of a response. */
export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

/** Token counts of a response; `input_tokens` is the whole prompt the engine read. */
export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** A response message (`type: "message"`). */
export interface Message {
  id: string;
  type: "message";
  role: "assistant";
  model: string;
  content: ContentBlock[];
  stop_reason: StopReason;
  stop_sequence: string | null;
  usage: Usage;
}
