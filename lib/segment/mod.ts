/** Training samples exported from recorded sessions. @module */
export * from "./samples.ts";
