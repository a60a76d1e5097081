/**
 * The served model's tokenizer: loading it, its faster steps, its guard and its decoding. @module
 */
export * from "./tokenizer.ts";
export * from "./encode_guard.ts";
export * from "./plain_text.ts";
export * from "./decode_stream.ts";
