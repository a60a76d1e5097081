/** Agent clients as descriptors: their sub-agent headers and dispatch tools. @module */
export * from "./agent_client.ts";
export * from "./claude_code.ts";
export * from "./qwen_code.ts";
export * from "./codex.ts";
export * from "./known_clients.ts";
