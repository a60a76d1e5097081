/**
 * Test helpers for rollouts: scripted agents (what the scripted engine makes Claude Code do),
 * submitting and awaiting jobs over HTTP.
 *
 * @module
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import type { Script } from "../../lib/scripted_engine/mod.ts";
import { ADMIN_HEADERS } from "../_gateway.ts";
import { waitFor } from "../_host.ts";

/** A gateway reached over HTTP: a test gateway, or a gateway process. */
export interface Reachable {
  readonly url: string;
}

/** A job's view, as JSON. */
// deno-lint-ignore no-explicit-any
export type JobJson = Record<string, any>;

/** Model text that calls Claude Code's Bash tool with `command`. */
export function bash(command: string, timeout?: number): string {
  const args = { command, description: "Run a command", ...(timeout ? { timeout } : {}) };
  return `<tool_call>\n${JSON.stringify({ name: "Bash", arguments: args })}\n</tool_call>`;
}

/** Model text that calls tool `name` with `args`. */
export function toolCall(name: string, args: Record<string, unknown>): string {
  return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
}

/** Model text that calls Qwen Code's `run_shell_command` tool with `command`. */
export function qwenShell(command: string): string {
  return toolCall("run_shell_command", { command, description: "Run a command" });
}

/** An agent that runs `command` once (with Claude Code's Bash tool unless told), then says `final`. */
export function oneCommand(
  command: string,
  final = "Done.",
  timeout?: number,
  call: (command: string) => string = (command) => bash(command, timeout),
): Script {
  return (_call, promptText) => {
    const prompt = promptText();
    const lastUser = prompt.slice(prompt.lastIndexOf("<|im_start|>user"));
    return lastUser.includes("<tool_response>") ? final : call(command);
  };
}

/** The python_unittest fixture's fix, as a shell command. */
export const FIX_CALC =
  "sed -i 's#a // b#a / b#; s#sum(values) // len(values)#sum(values) / len(values)#' calc.py";

/** A wrong fix: divide only. */
export const HALF_FIX_CALC = "sed -i 's#a // b#a / b#' calc.py";

/** POST /rollout; returns the response body (202 expected). */
export async function submit(
  gw: Reachable,
  body: unknown,
): Promise<{ group_id: string; jobs: { id: string }[] }> {
  const response = await fetch(`${gw.url}/rollout`, {
    method: "POST",
    headers: ADMIN_HEADERS,
    body: JSON.stringify(body),
  });
  const json = await response.json();
  assert.equal(response.status, 202, JSON.stringify(json));
  return json;
}

/** GET /rollout/:id. */
export async function job(gw: Reachable, id: string, query = ""): Promise<JobJson> {
  const response = await fetch(`${gw.url}/rollout/${id}${query}`, { headers: ADMIN_HEADERS });
  const json = await response.json();
  assert.equal(response.status, 200, JSON.stringify(json));
  return json;
}

/** True once a job has finished. */
export const finished = (view: JobJson): boolean =>
  ["done", "failed", "aborted"].includes(view.phase);

/** Polls job `id` until `until` holds (default: finished), failing after `limitMs`. */
export async function awaitJob(
  gw: Reachable,
  id: string,
  until: (view: JobJson) => boolean = finished,
  limitMs = 120_000,
): Promise<JobJson> {
  let view: JobJson = {};
  await waitFor(
    async () => until(view = await job(gw, id)),
    () => `job ${id}: ${JSON.stringify(view)}`,
    limitMs,
  );
  return view;
}

/**
 * The `command` harness running python/examples/mini_swe_agent.py, a stdlib agent with one bash
 * tool, over Chat Completions. The agent travels in its command: the sandbox sees nothing of
 * this checkout.
 */
export async function miniSweAgent(): Promise<Record<string, unknown>> {
  const script = await Deno.readFile(
    new URL("../../python/examples/mini_swe_agent.py", import.meta.url),
  );
  const command =
    `echo ${Buffer.from(script).toString("base64")} | base64 -d > "$TMPDIR/agent.py" && ` +
    'python3 "$TMPDIR/agent.py" --base-url "$AGENT_BASE_URL" --api-key "$AGENT_KEY" ' +
    '--model "$AGENT_MODEL" --task {prompt}';
  return {
    harness: "command",
    command,
    base_url_env: "AGENT_BASE_URL",
    token_env: "AGENT_KEY",
    model_env: "AGENT_MODEL",
    model: "qwen3-command",
  };
}
