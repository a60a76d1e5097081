/** The inference engine: SGLang's token-in/token-out `/generate` and its sampling parameters. @module */
export * from "./sampling.ts";
export * from "./sglang_client.ts";
export * from "./prompt_ids.ts";
export * from "./engine_control.ts";
