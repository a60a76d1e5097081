/**
 * Test helpers for rollouts: scripted agents (what the scripted engine makes Claude Code do),
 * submitting and awaiting jobs over HTTP.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Script } from "../../fixtures/scripted_engine.ts";
import { ADMIN_TOKEN, type TestGateway } from "../_gateway.ts";

export const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };

/** Model text that calls Claude Code's Bash tool with `command`. */
export function bash(command: string, timeout?: number): string {
  const args = { command, description: "Run a command", ...(timeout ? { timeout } : {}) };
  return `<tool_call>\n${JSON.stringify({ name: "Bash", arguments: args })}\n</tool_call>`;
}

/** An agent that runs `command` once, then says `final`. */
export function oneCommand(command: string, final = "Done.", timeout?: number): Script {
  return (_call, promptText) => {
    const prompt = promptText();
    const lastUser = prompt.slice(prompt.lastIndexOf("<|im_start|>user"));
    return lastUser.includes("<tool_response>") ? final : bash(command, timeout);
  };
}

/** The python_unittest fixture's fix, as a shell command. */
export const FIX_CALC =
  "sed -i 's#a // b#a / b#; s#sum(values) // len(values)#sum(values) / len(values)#' calc.py";

/** A wrong fix: divide only. */
export const HALF_FIX_CALC = "sed -i 's#a // b#a / b#' calc.py";

/** POST /rollout; returns the response body (202 expected). */
export async function submit(
  gw: TestGateway,
  body: unknown,
): Promise<{ group_id: string; jobs: { id: string }[] }> {
  const response = await fetch(`${gw.url}/rollout`, {
    method: "POST",
    headers: ADMIN,
    body: JSON.stringify(body),
  });
  const json = await response.json();
  assert.equal(response.status, 202, JSON.stringify(json));
  return json;
}

/** GET /rollout/:id. */
// deno-lint-ignore no-explicit-any
export async function job(gw: TestGateway, id: string, query = ""): Promise<any> {
  const response = await fetch(`${gw.url}/rollout/${id}${query}`, { headers: ADMIN });
  const json = await response.json();
  assert.equal(response.status, 200, JSON.stringify(json));
  return json;
}

/** Polls job `id` until `until` holds (default: finished), failing after `limitMs`. */
export async function awaitJob(
  gw: TestGateway,
  id: string,
  // deno-lint-ignore no-explicit-any
  until: (view: any) => boolean = (view) => ["done", "failed", "aborted"].includes(view.phase),
  limitMs = 120_000,
  // deno-lint-ignore no-explicit-any
): Promise<any> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const view = await job(gw, id);
    if (until(view)) return view;
    if (Date.now() > deadline) throw new Error(`Job ${id} stuck: ${JSON.stringify(view)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
