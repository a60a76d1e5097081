/**
 * The served model, loaded and checked at start-up: its tokenizer with its formats and template,
 * and what its own files say when a setting needs them (its MoE shape, its image processor).
 *
 * @module
 */
export * from "./served_tokenizer.ts";
export * from "./model_files.ts";
