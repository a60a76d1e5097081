/**
 * The agent clients the gateway knows: a new client's habits are one descriptor file and one
 * line here.
 *
 * @module
 */
import type { AgentClient } from "./agent_client.ts";
import { CLAUDE_CODE } from "./claude_code.ts";
import { CODEX } from "./codex.ts";
import { QWEN_CODE } from "./qwen_code.ts";

/** Every known client, in the order their agent headers are read. */
export const KNOWN_CLIENTS: readonly AgentClient[] = [CLAUDE_CODE, QWEN_CODE, CODEX];
