/** Configuration: environment variables parsed once at start-up. @module */
export * from "./reward_allocation.ts";
export * from "./config_schema.ts";
export * from "./config_types.ts";
export * from "./config_table.ts";
export * from "./resolve_config.ts";
export * from "./config_report.ts";
