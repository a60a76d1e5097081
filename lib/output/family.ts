/**
 * What a model family is to the gateway, as one record: the names SGLang serves it under, how its
 * chat template is recognised, how its turns end, how its output is read (whole and streamed, by
 * the record itself), the role markers its template starts messages with, and how its template
 * names tool calls. Each family is one file in `families/`, registered in `families/mod.ts`;
 * everything that differs by family (start-up checks, `parse_output`, `stream_output`, the xtuner
 * export, lowering) reads the record instead of switching on a parser name.
 *
 * @module
 */
import type { OutputStream, ParsedOutput } from "./output_blocks.ts";
import type { ToolSchemas } from "./qwen3_coder_parser.ts";
import type { ParsedAnswer } from "./tool_parser.ts";

/**
 * How a format's turns end, as token texts:
 * - `stops`: what the model samples to end its turn (the engine stops on each);
 * - `close`: the token that closes an output that ended otherwise, cut by `max_tokens` or a stop
 *   string (T5); `false` when nothing does, because the next message's role marker follows;
 * - `closers`: what ends an assistant turn as the template renders it: a delta starts after one;
 * - `openers`: for families without a closer, the role markers that start the next message: a
 *   delta starts at one. When the model sampled that marker as its stop token, the chain already
 *   holds it and the delta's copy is dropped.
 *
 * `null` is the tokenizer's `eos_token`, which ends every turn of most families.
 */
export interface TurnEndTexts {
  readonly stops: readonly string[] | null;
  readonly close: string | null | false;
  readonly closers: readonly string[] | null;
  readonly openers: readonly string[];
}

/** Turns that end with the tokenizer's `eos_token`, as most families' do. */
export const EOS_ENDS: TurnEndTexts = { stops: null, close: null, closers: null, openers: [] };

/** Where a streamed answer's tool calls are: each between `open` and `close`. */
export interface ToolRegions {
  readonly open: string;
  readonly close: string;
  /** Only the first region is read; what follows it is text (the formats of one section). */
  readonly once: boolean;
}

/** `<tool_call>` … `</tool_call>`, as many as the model writes. */
export const TAGGED_CALLS: ToolRegions = {
  open: "<tool_call>",
  close: "</tool_call>",
  once: false,
};

/** The parsers of the served model, by SGLang's names; `null` reasoning: it does not think. */
export interface ModelFormats {
  readonly toolCallParser: string;
  readonly reasoningParser: string | null;
}

/** What reading an output needs to know about the model and the request that produced it. */
export interface OutputOptions {
  /** The prompt ended inside an open `<think>` block. */
  readonly startsInReasoning: boolean;
  /** The tools the request offered, with their parameter schemas when the format types values. */
  readonly tools: ToolSchemas;
  /** The served model's formats: one of the family's tool-call parsers, and its reasoning. */
  readonly formats: ModelFormats;
}

/**
 * How a family's output is read, whole and as it streams, each by the record itself. What the
 * stream sends always adds up to what `parse` makes of the whole text, for any way the text is cut
 * into chunks.
 */
export interface OutputFormat {
  /** The blocks of decoded model output (its end-of-turn token already removed). */
  parse(text: string, options: OutputOptions): ParsedOutput;
  /** A stream reading output as `parse` reads it with the same options. */
  stream(options: OutputOptions): OutputStream;
  /**
   * The reasoning parser that goes with this output alone, when the output's own parser reads the
   * reasoning too (harmony's channels: `gpt-oss`): the family is served with it or with none, and
   * no other family with it. Absent when the reasoning is read apart from the answer.
   */
  readonly ownReasoning?: string;
}

/**
 * How a family that reasons in `<think>` blocks writes its answer after them: text and tool calls,
 * read by `reasoned_output.ts`'s shared parse and stream.
 */
export interface AnswerFormat {
  /** The answer's text and calls, by the tool-call parser `parser` (one of the family's). */
  parseAnswer(text: string, tools: ToolSchemas, parser: string): ParsedAnswer;
  /** Where a streamed answer's calls are. */
  readonly regions: ToolRegions;
  /** What begins the calls: an unclosed reasoning block also ends there. */
  readonly callsStart: string;
}

/** The role a prompt message has, as the xtuner export names it; `context` when unknown. */
export type MessageRole = "system" | "developer" | "user" | "assistant" | "tool" | "context";

/** How the family's template starts messages, for cutting prompt tokens into messages. */
export interface RoleMarkers {
  /** Token texts that open a message. */
  readonly openers: readonly string[];
  /** The role of a message whose text starts with an opener. */
  role(text: string): MessageRole;
  /** Tokens before the first prompt's first opener: the system prompt, or glue for the next. */
  readonly lead: "system" | "join";
  /** The token that opens each tool result inside one block of them. */
  readonly toolBlock?: string;
}

/** A model family, as the gateway serves it. */
export interface ModelFamily {
  /** What the docs and errors call it. */
  readonly name: string;
  /** SGLang's `--tool-call-parser` names it is served under, which this gateway parses. */
  readonly toolCallParsers: readonly string[];
  /**
   * The tool-call parser a chat template's text names, when the template is this family's (by
   * the markers `has` finds in it); `null` when it is not. A name SGLang has but this gateway
   * does not parse yet is refused at start-up.
   */
  detect(has: (marker: string) => boolean): string | null;
  /**
   * Its markers appear in other families' templates too (Qwen's `<tool_call>`): it is tested
   * after every family without this.
   */
  readonly detectLast?: boolean;
  /** The reasoning parser a template of this family names; `null`: it does not think. */
  detectReasoning(has: (marker: string) => boolean): string | null;
  readonly ends: TurnEndTexts;
  readonly output: OutputFormat;
  readonly roles: RoleMarkers;
  /**
   * The ids the template writes for tool calls: the client's own (`client`), or ones it makes
   * up from the function's name and index (`functions`, Kimi K2's `functions.NAME:IDX`), which
   * a tool result must then be labelled with.
   */
  readonly toolCallIds: "client" | "functions";
  /**
   * The token its vision-language templates render where an image stands, once, which the
   * gateway expands to the image's tokens (Qwen-VL's `<|image_pad|>`); absent when the family
   * has no vision models.
   */
  readonly imagePad?: string;
}

/** The reasoning most families' templates write: `<think>` blocks, read as Qwen3's. */
export const thinksInTags = (has: (marker: string) => boolean): string | null =>
  has("<think>") ? "qwen3" : null;

const ROLES: ReadonlySet<string> = new Set(["system", "developer", "user", "assistant", "tool"]);

/** `name` as a role, `context` when it names none. */
export const namedRole = (name: string | undefined): MessageRole =>
  name !== undefined && ROLES.has(name) ? name as MessageRole : "context";

/** The role of a message by the marker its text starts with, from `roles`. */
export const roleByMarker =
  (roles: Readonly<Record<string, MessageRole>>) => (text: string): MessageRole => {
    for (const [marker, role] of Object.entries(roles)) {
      if (text.startsWith(marker)) return role;
    }
    return "context";
  };
