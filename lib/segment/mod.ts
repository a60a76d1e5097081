/** Training segments and records exported from recorded sessions. @module */
export * from "./segments.ts";
export * from "./allocate_reward.ts";
export * from "./staleness.ts";
export * from "./samples.ts";
export * from "./export_slime.ts";
export * from "./export_verl.ts";
export * from "./export_jsonl.ts";
export * from "./export_xtuner.ts";
export * from "./export_raw.ts";
export * from "./export_formats.ts";
export * from "./segment_routes.ts";
export * from "./prefix_tree.ts";
