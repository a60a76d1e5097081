/** Sessions: tokens, routing requests to chains, and running one turn. @module */
export * from "./records.ts";
export * from "./session_store.ts";
export * from "./reward_store.ts";
export * from "./errors.ts";
export * from "./session.ts";
export * from "./turn_input.ts";
export * from "./route_plan.ts";
export * from "./route_snapshot.ts";
export * from "./route.ts";
export * from "./run_turn.ts";
export * from "./turn_load.ts";
export * from "./dispatches.ts";
export * from "./output_feed.ts";
export * from "./lifecycle.ts";
export * from "./chain_page.ts";
export * from "./image_bytes.ts";
export * from "./image_store.ts";
