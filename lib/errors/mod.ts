/**
 * Error codes, how each is answered, the errors every protocol shares, and the configuration's.
 *
 * @module
 */
export * from "./codes.ts";
export * from "./envelope.ts";
export * from "./gateway_envelope.ts";
export * from "./background.ts";
export * from "./invalid_request.ts";
export * from "./config_error.ts";
