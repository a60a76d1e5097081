/**
 * The function tools a Responses request shows the model: its own function tools, then those of
 * its `namespace` tools (Codex offers its sub-agent tools as the namespace `multi_agent_v1`), each
 * by its plain name — the name a call of it carries, and echoes of the call name. A name offered
 * twice is shown once, the first time (top-level functions before namespaced ones), so what the
 * model sees does not depend on which copy a call meant. A call of a namespaced function is
 * answered with its namespace beside its name, as the client dispatches it.
 *
 * @module
 */
import { LimitError, MAX_TOOLS } from "../limits/mod.ts";
import type { FunctionTool, NamespaceTool, Tool } from "./types.ts";

/** What a request offers the model as functions. */
export interface OfferedFunctions {
  /** The functions shown, in order, each name once. */
  readonly functions: readonly FunctionTool[];
  /** The namespace function `name` was offered in; `null` for a top-level or unknown name. */
  namespaceOf(name: string): string | null;
}

/**
 * The functions `tools` offers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { offeredFunctions } from "./offered_functions.ts";
 * const offered = offeredFunctions([
 *   { type: "function", name: "exec_command", parameters: {} },
 *   {
 *     type: "namespace",
 *     name: "multi_agent_v1",
 *     tools: [{ type: "function", name: "spawn_agent", parameters: {} }],
 *   },
 *   { type: "web_search" },
 * ]);
 * assert.deepEqual(offered.functions.map((tool) => tool.name), ["exec_command", "spawn_agent"]);
 * assert.equal(offered.namespaceOf("spawn_agent"), "multi_agent_v1");
 * assert.equal(offered.namespaceOf("exec_command"), null);
 * ```
 * @throws {LimitError} naming `tools` when more than {@linkcode MAX_TOOLS} functions are offered
 * in all.
 */
export function offeredFunctions(tools: readonly Tool[] | null | undefined): OfferedFunctions {
  const functions: FunctionTool[] = [];
  const namespaces = new Map<string, string | null>();
  const offer = (tool: FunctionTool, namespace: string | null) => {
    if (namespaces.has(tool.name)) return;
    namespaces.set(tool.name, namespace);
    functions.push(tool);
  };
  const all = tools ?? [];
  for (const tool of all) if (tool.type === "function") offer(tool as FunctionTool, null);
  for (const tool of all) {
    if (tool.type !== "namespace") continue;
    const namespace = tool as NamespaceTool;
    for (const inner of namespace.tools) {
      if (inner.type === "function") offer(inner as FunctionTool, namespace.name);
    }
  }
  if (functions.length > MAX_TOOLS) {
    throw new LimitError(
      "tools",
      `${functions.length} functions offered with those of the namespaces, at most ${MAX_TOOLS}`,
    );
  }
  return {
    functions,
    namespaceOf: (name) => namespaces.get(name) ?? null,
  };
}
