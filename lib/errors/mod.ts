/** Error codes, how each is answered, and the errors every protocol shares. @module */
export * from "./codes.ts";
export * from "./envelope.ts";
export * from "./gateway_envelope.ts";
export * from "./background.ts";
export * from "./invalid_request.ts";
