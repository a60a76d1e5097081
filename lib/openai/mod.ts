/** The OpenAI Chat Completions adapter: request schemas, translation, responses, chunks, errors. @module */
export * from "./types.ts";
export * from "./translate.ts";
export * from "./build_response.ts";
export * from "./stream_response.ts";
export * from "./error_body.ts";
export * from "./chat_completions_turn.ts";
export * from "./request_fields.ts";
export * from "./reply_headers.ts";
export * from "./stream_shape.ts";
