/** Error codes and how each is answered. @module */
export * from "./codes.ts";
export * from "./background.ts";
