/**
 * The inference engine: the dialect-neutral engine interface, its dialects (SGLang's token-in/
 * token-out `/generate` first) and the sampling parameters. @module
 */
export * from "./engine.ts";
export * from "./generation.ts";
export * from "./sampling.ts";
export * from "./sglang_client.ts";
export * from "./prompt_ids.ts";
export * from "./engine_control.ts";
export * from "./sglang.ts";
export * from "./vllm_client.ts";
export * from "./vllm_control.ts";
export * from "./vllm.ts";
export * from "./engine_http.ts";
export * from "./http_worker.ts";
export * from "./dialects.ts";
export * from "./placement.ts";
export * from "./engine_sessions.ts";
export * from "./health.ts";
export * from "./routed_experts.ts";
export * from "./moe_shape.ts";
export * from "./routes_reading.ts";
