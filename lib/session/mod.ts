/** Sessions: tokens, opening, and running one turn. @module */
export * from "./session.ts";
export * from "./run_turn.ts";
