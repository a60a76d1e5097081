/** The Anthropic Messages API adapter: request schemas, lowering, responses, SSE, errors. @module */
export * from "./types.ts";
export * from "./lower_request.ts";
export * from "./media.ts";
export * from "./identity.ts";
export * from "./signature.ts";
export * from "./build_response.ts";
export * from "./stream_response.ts";
export * from "./error_body.ts";
export * from "./messages_turn.ts";
export * from "./request_fields.ts";
export * from "./stream_shape.ts";
