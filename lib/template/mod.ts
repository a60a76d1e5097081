/** Tokenizer, chat template, delta rendering and output parsing for the served model. @module */
export * from "./tokenizer.ts";
export * from "./encode_guard.ts";
export * from "./prompt_encoder.ts";
export * from "./encoder_pool.ts";
export * from "./plain_text.ts";
export * from "./render_delta.ts";
export * from "./reasoning_parser.ts";
export * from "./tool_parser.ts";
export * from "./output_blocks.ts";
export * from "./parse_output.ts";
export * from "./model_family.ts";
export * from "./qwen3_coder_parser.ts";
export * from "./section_calls.ts";
export * from "./harmony_parser.ts";
export * from "./glm_parser.ts";
export * from "./stream_output.ts";
export * from "./decode_stream.ts";
