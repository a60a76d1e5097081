/**
 * OpenAI's Responses API as the gateway accepts and answers it: zod schemas for the request
 * (unknown fields tolerated, as clients send many; items without a `type` are messages, as the
 * API reads them) and types for the response object and its stream events.
 *
 * @module
 */
import { z } from "zod";
import { MAX_MODEL_CHARS, MAX_TOOL_NAME_CHARS, MAX_TOOLS } from "../limits/mod.ts";

const InputText = z.looseObject({ type: z.literal("input_text"), text: z.string() });
const OutputText = z.looseObject({ type: z.literal("output_text"), text: z.string() });
const Refusal = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });
const InputImage = z.looseObject({ type: z.literal("input_image") });
const InputFile = z.looseObject({ type: z.literal("input_file") });
const InputAudio = z.looseObject({ type: z.literal("input_audio") });

/** A part of a message's content. */
const ContentPart = z.discriminatedUnion("type", [
  InputText,
  OutputText,
  Refusal,
  InputImage,
  InputFile,
  InputAudio,
]);
export type ContentPart = z.infer<typeof ContentPart>;

const MessageItem = z.looseObject({
  type: z.literal("message"),
  role: z.enum(["user", "assistant", "system", "developer"]),
  content: z.union([z.string(), z.array(ContentPart)]),
  id: z.string().nullish(),
});
const FunctionCallItem = z.looseObject({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: z.string().min(1).max(MAX_TOOL_NAME_CHARS),
  /** JSON text of an object, as the model wrote it. */
  arguments: z.string(),
  id: z.string().nullish(),
});
const FunctionCallOutputItem = z.looseObject({
  type: z.literal("function_call_output"),
  call_id: z.string().min(1),
  output: z.union([z.string(), z.array(ContentPart)]),
});
const ReasoningItem = z.looseObject({
  type: z.literal("reasoning"),
  id: z.string().nullish(),
  summary: z.array(z.looseObject({ type: z.string(), text: z.string() })).nullish(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string() })).nullish(),
  encrypted_content: z.string().nullish(),
});
/** The items the gateway serves. */
const ServedItem = z.discriminatedUnion("type", [
  MessageItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  ReasoningItem,
]);

/** An object of a type the gateway does not read: passed on for the caller to refuse or skip. */
type Other = { type: string } & Record<string, unknown>;

/**
 * An object with a `type`: held to `schema` when `served` names its type (so a problem is named
 * by its own field, `input.0.role`), else passed on as it is.
 */
function servedOrOther<T>(served: ReadonlySet<string>, schema: z.ZodType<T>) {
  return z.looseObject({ type: z.string() }).transform((value, ctx): T | Other => {
    if (!served.has(value.type)) return value as Other;
    const parsed = schema.safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) {
      ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
    }
    return z.NEVER;
  });
}

/**
 * One item of `input`; a message may leave its `type` out. Any type but the served ones passes,
 * for the translation to refuse by name (`item_reference`, built-in tool calls…).
 */
export const InputItem = z.preprocess(
  (item) =>
    item !== null && typeof item === "object" && !Array.isArray(item) &&
      !Object.hasOwn(item, "type") && Object.hasOwn(item, "role")
      ? { ...item, type: "message" }
      : item,
  servedOrOther(
    new Set(["message", "function_call", "function_call_output", "reasoning"]),
    ServedItem,
  ),
);
/** An item the gateway serves. */
export type ServedItem = z.infer<typeof ServedItem>;
/** One item of `input`. */
export type InputItem = ServedItem | Other;

/** A function tool, flat as this API has it (no `function` wrapper). */
export const FunctionTool = z.looseObject({
  type: z.literal("function"),
  name: z.string().min(1).max(MAX_TOOL_NAME_CHARS),
  description: z.string().nullish(),
  parameters: z.record(z.string(), z.unknown()).nullish(),
  strict: z.boolean().nullish(),
});
export type FunctionTool = z.infer<typeof FunctionTool>;

/**
 * A namespace of function tools (Codex offers its sub-agent tools as `multi_agent_v1`); a call of
 * one of them names the namespace beside the function's name.
 */
export const NamespaceTool = z.looseObject({
  type: z.literal("namespace"),
  name: z.string().min(1).max(MAX_TOOL_NAME_CHARS),
  description: z.string().nullish(),
  tools: z.array(servedOrOther(new Set(["function"]), FunctionTool)).max(MAX_TOOLS),
});
export type NamespaceTool = z.infer<typeof NamespaceTool>;

/**
 * Any tool: functions, and namespaces of them, are shown to the model; the others (built-in and
 * hosted tools) pass, not shown.
 */
const Tool = servedOrOther(
  new Set(["function", "namespace"]),
  z.discriminatedUnion("type", [FunctionTool, NamespaceTool]),
);
/** A tool of the request. */
export type Tool = FunctionTool | NamespaceTool | Other;

export const ToolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  z.looseObject({ type: z.literal("function"), name: z.string().min(1) }),
  z.looseObject({
    type: z.literal("allowed_tools"),
    mode: z.enum(["auto", "required"]),
    tools: z.array(z.looseObject({ type: z.string(), name: z.string().optional() })),
  }),
  z.looseObject({ type: z.string() }),
]);
export type ToolChoice = z.infer<typeof ToolChoice>;

/** `POST /v1/responses` body. */
export const ResponseCreateParams = z.looseObject({
  model: z.string().min(1).max(MAX_MODEL_CHARS),
  input: z.union([z.string(), z.array(InputItem).min(1).max(100_000)]),
  instructions: z.string().nullish(),
  tools: z.array(Tool).max(MAX_TOOLS).nullish(),
  tool_choice: ToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  max_output_tokens: z.number().int().min(1).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  stream: z.boolean().nullish(),
  store: z.boolean().nullish(),
  previous_response_id: z.string().nullish(),
  conversation: z.unknown().optional(),
  background: z.boolean().nullish(),
  include: z.array(z.string()).max(64).nullish(),
  reasoning: z.looseObject({
    effort: z.string().nullish(),
    summary: z.string().nullish(),
  }).nullish(),
  text: z.looseObject({}).nullish(),
  truncation: z.enum(["auto", "disabled"]).nullish(),
  metadata: z.record(z.string(), z.unknown()).nullish(),
});
export type ResponseCreateParams = z.infer<typeof ResponseCreateParams>;

/** A text part of an output message. */
export interface OutputTextPart {
  type: "output_text";
  text: string;
  annotations: [];
}

/** An output item. */
export type OutputItem =
  | {
    type: "reasoning";
    id: string;
    summary: { type: "summary_text"; text: string }[];
    content: { type: "reasoning_text"; text: string }[];
    /** The reasoning again, for clients that echo only this field (`include` asks for it). */
    encrypted_content?: string;
    status: "in_progress" | "completed";
  }
  | {
    type: "message";
    id: string;
    role: "assistant";
    status: "in_progress" | "completed" | "incomplete";
    content: OutputTextPart[];
  }
  | {
    type: "function_call";
    id: string;
    call_id: string;
    name: string;
    /** The namespace the called function was offered in, for a namespaced one. */
    namespace?: string;
    arguments: string;
    status: "in_progress" | "completed";
  };

/** Token counts; `input_tokens` is the whole prompt the engine read. */
export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** The response object (`object: "response"`). */
export interface ResponseObject {
  id: string;
  object: "response";
  created_at: number;
  status: "in_progress" | "completed" | "incomplete" | "failed";
  error: { code: string; message: string } | null;
  incomplete_details: { reason: "max_output_tokens" } | null;
  instructions: string | null;
  max_output_tokens: number | null;
  model: string;
  output: OutputItem[];
  parallel_tool_calls: boolean;
  previous_response_id: null;
  reasoning: { effort: string | null; summary: string | null };
  store: boolean;
  temperature: number | null;
  text: Record<string, unknown>;
  tool_choice: unknown;
  tools: unknown[];
  top_p: number | null;
  truncation: "auto" | "disabled";
  usage: ResponseUsage | null;
  metadata: Record<string, unknown>;
}

/** One stream event: its `type`, its `sequence_number`, its fields. */
export type ResponseStreamEvent =
  & { type: string; sequence_number: number }
  & Record<
    string,
    unknown
  >;
