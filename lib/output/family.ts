/**
 * What a model family is to the gateway, as one record: the names SGLang serves it under, how its
 * chat template is recognised, how its turns end, how its output is parsed (whole and streamed),
 * the role markers its template starts messages with, and how its template names tool calls. Each
 * family is one file in `families/`, registered in `families/mod.ts`; everything that differs by
 * family (start-up checks, `parse_output`, `stream_output`, the xtuner export, lowering) reads
 * the record instead of switching on a parser name.
 *
 * @module
 */
import type { ParsedOutput } from "./output_blocks.ts";
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

/** How a family's output is read. */
export type OutputFormat =
  /**
   * One parser reads reasoning, text and calls alike: harmony's channels (streamed by
   * `stream_output`'s harmony stream). `reasoningParser` is SGLang's name for the channels'
   * reasoning, the only reasoning parser that goes with them.
   */
  | {
    readonly kind: "channels";
    parse(text: string, toolNames: ReadonlySet<string>): ParsedOutput;
    readonly reasoningParser: string;
  }
  /**
   * `<think>` reasoning (per the reasoning parser), then an answer of text and tool calls. An
   * unclosed reasoning block also ends where `callsStart` begins the calls.
   */
  | {
    readonly kind: "reasoned";
    /** The answer's text and calls, by the tool-call parser `parser` (one of the family's). */
    parseAnswer(text: string, tools: ToolSchemas, parser: string): ParsedAnswer;
    readonly regions: ToolRegions;
    readonly callsStart: string;
  };

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
