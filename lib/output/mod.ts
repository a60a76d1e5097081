/** Model families, and their output read whole and streamed: thinking, text, tool calls. @module */
export * from "./reasoning_parser.ts";
export * from "./tool_parser.ts";
export * from "./output_blocks.ts";
export * from "./parse_output.ts";
export * from "./family.ts";
export * from "./families/mod.ts";
export * from "./model_family.ts";
export * from "./qwen3_coder_parser.ts";
export * from "./section_calls.ts";
export * from "./harmony_parser.ts";
export * from "./glm_parser.ts";
export * from "./reasoned_output.ts";
export * from "./reasoned_stream.ts";
export * from "./stream_output.ts";
