/**
 * The agents: one record per agent holding its habits on the wire (sub-agent headers, dispatch
 * tools) and its harness for `/rollout` (settings, install, command, outcome), listed once.
 *
 * @module
 */
export * from "./wire_habits.ts";
export * from "./common_settings.ts";
export * from "./install.ts";
export * from "./agent.ts";
export * from "./result_event.ts";
export * from "./claude_code.ts";
export * from "./qwen_code.ts";
export * from "./codex.ts";
export * from "./command.ts";
export * from "./agents.ts";
