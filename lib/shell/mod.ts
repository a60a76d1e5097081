/** Words for a POSIX shell. @module */
export * from "./shell_quote.ts";
