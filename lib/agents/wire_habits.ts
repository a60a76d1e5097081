/**
 * What the gateway knows of an agent's habits on the wire, part of each agent's record: the
 * headers that name its sub-agents, and the tool calls that start one. Routing asks the listed
 * agents (`agents.ts`) instead of naming any agent's tools itself.
 *
 * @module
 */
import type { CodedError } from "../errors/mod.ts";
import { LimitError, MAX_AGENT_ID_CHARS } from "../limits/mod.ts";

/** A tool whose calls start a sub-agent, and the input field that holds the sub-agent's task. */
export interface DispatchTool {
  readonly name: string;
  /**
   * The input field holding the task the sub-agent's first user messages quote: a string, or
   * items with `text` (joined by newlines).
   */
  readonly taskField: string;
}

/** The headers naming the sub-agent a request comes from, and its parent. */
export interface AgentHeaders {
  readonly id: string;
  readonly parentId: string;
  /**
   * The id header names a sub-agent only when the parent header is sent too: the client sends
   * its root agent's id in the same header (Codex's `thread-id`).
   */
  readonly onlyWithParent?: boolean;
}

/** An agent's habits that routing depends on. */
export interface WireHabits {
  /** The agent as requests and the docs name it (`claude_code`, `qwen_code`, `codex`). */
  readonly name: string;
  /** Headers naming the sub-agent a request comes from, and its parent; `null` when it sends none. */
  readonly agentHeaders: AgentHeaders | null;
  /** Tools whose calls start a sub-agent; none for an agent that starts none the gateway knows. */
  readonly dispatchTools: readonly DispatchTool[];
}

/** The client's agent ids (`x-claude-code-agent-id`, `…-parent-agent-id`), when it sent them. */
export interface AgentIds {
  readonly id: string | null;
  readonly parentId: string | null;
}

/**
 * Which tool calls start a sub-agent, by the agents' wire habits: the route planner knows no
 * agent's tool names.
 */
export interface DispatchTools {
  /** The task a call of tool `name` with `input` starts a sub-agent with; `null` for any other call. */
  taskOf(name: string, input: Readonly<Record<string, unknown>>): string | null;
}

/**
 * The agent ids a request's headers carry, read with the first agent's headers that name one:
 * `null` ids when none does.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { agentIdsOf, AGENTS } from "./mod.ts";
 * const headers = new Headers({ "x-claude-code-agent-id": "a1b2" });
 * assert.deepEqual(agentIdsOf(headers, AGENTS), { id: "a1b2", parentId: null });
 * ```
 * @throws {LimitError} naming the header when an id is longer than {@linkcode MAX_AGENT_ID_CHARS}.
 */
export function agentIdsOf(headers: Headers, clients: readonly WireHabits[]): AgentIds {
  let found: AgentIds = { id: null, parentId: null };
  for (const client of clients) {
    if (!client.agentHeaders) continue;
    // Every header is checked, read or not: no oversized value passes unseen.
    const id = header(headers, client.agentHeaders.id);
    const parentId = header(headers, client.agentHeaders.parentId);
    if (client.agentHeaders.onlyWithParent && parentId === null) continue;
    if (id !== null && found.id === null) found = { id, parentId };
  }
  return found;
}

/**
 * The dispatch tools of all `clients` together: a call starts a sub-agent when any agent's
 * table names its tool and its task field holds a string. A client is not told apart by its
 * requests (proxies and SDKs rewrite user agents), and a dispatch is only taken once a new
 * conversation quotes the task, so one table serves every request.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { AGENTS, dispatchToolsOf } from "./mod.ts";
 * const dispatch = dispatchToolsOf(AGENTS);
 * assert.equal(dispatch.taskOf("agent", { prompt: "List the files." }), "List the files.");
 * assert.equal(dispatch.taskOf("Bash", { command: "ls" }), null);
 * ```
 */
export function dispatchToolsOf(clients: readonly WireHabits[]): DispatchTools {
  const fields = new Map<string, string[]>();
  for (const client of clients) {
    for (const tool of client.dispatchTools) {
      const known = fields.get(tool.name) ?? [];
      if (!known.includes(tool.taskField)) known.push(tool.taskField);
      fields.set(tool.name, known);
    }
  }
  return {
    taskOf(name, input) {
      for (const field of fields.get(name) ?? []) {
        const task = Object.hasOwn(input, field) ? taskText(input[field]) : null;
        if (task !== null) return task;
      }
      return null;
    },
  };
}

/** A task as text: a string, or the `text` of items (`[{type: "text", text}]`) joined by newlines. */
function taskText(value: unknown): string | null {
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) return null;
  const texts = value.flatMap((item) =>
    typeof item === "object" && item !== null && Object.hasOwn(item, "text") &&
      typeof item.text === "string"
      ? [item.text as string]
      : []
  );
  return texts.length > 0 ? texts.join("\n") : null;
}

/** A header's value that is not UTF-8 text (HTTP 400). */
export class HeaderTextError extends TypeError implements CodedError {
  readonly code = "invalid_request" as const;
  constructor(name: string) {
    super(`${name}: not UTF-8 text`);
    this.name = "HeaderTextError";
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * A header's value as the text its client wrote, UTF-8 decoded (`Headers` gives each byte as a
 * character, as Latin-1 would); `null` when absent or empty.
 *
 * @throws {LimitError} past {@linkcode MAX_AGENT_ID_CHARS} characters; {@linkcode HeaderTextError}
 * for bytes that are not UTF-8.
 */
function header(headers: Headers, name: string): string | null {
  const raw = headers.get(name);
  if (raw === null || raw === "") return null;
  // Each character of `raw` is one byte: past 4 bytes a character, too long whatever they spell.
  if (raw.length > 4 * MAX_AGENT_ID_CHARS) {
    throw new LimitError(name, `more than ${MAX_AGENT_ID_CHARS} characters`);
  }
  let value = raw;
  // deno-lint-ignore no-control-regex
  if (/[^\x00-\x7f]/.test(raw)) {
    try {
      value = utf8.decode(Uint8Array.from(raw, (char) => char.charCodeAt(0)));
    } catch {
      throw new HeaderTextError(name);
    }
  }
  const chars = value === raw ? raw.length : [...value].length;
  if (chars > MAX_AGENT_ID_CHARS) {
    throw new LimitError(name, `${chars} characters, at most ${MAX_AGENT_ID_CHARS}`);
  }
  return value;
}
