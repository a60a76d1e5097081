/** The OpenAI Responses API adapter: request schemas, translation, the response, its events. @module */
export * from "./types.ts";
export * from "./offered_functions.ts";
export * from "./translate.ts";
export * from "./build_response.ts";
export * from "./stream_events.ts";
export * from "./responses_turn.ts";
export * from "./request_fields.ts";
export * from "./stream_shape.ts";
