/** Rendering chat prompts and deltas into tokens, in process or on the encoder pool. @module */
export * from "./prompt_encoder.ts";
export * from "./encoder_pool.ts";
export * from "./render_delta.ts";
