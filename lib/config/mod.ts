/** Configuration: environment variables parsed once at start-up. @module */
export * from "./resolve_config.ts";
