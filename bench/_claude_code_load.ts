/**
 * The Claude-Code-sized conversation the load bench and the turn profile drive: the system
 * prompt and 12 tools of a recorded Claude Code request, a project-notes message, then a history
 * growing by a ~680-token tool result per turn.
 *
 * @module
 */
import type { MessageParam } from "../lib/anthropic/mod.ts";
import { ADMIN, filler } from "./_harness.ts";

/** Lines of tool output per turn: about 14 tokens each, so ~500–700 tokens. */
export const RESULT_LINES = 36;

const recorded = JSON.parse(
  await Deno.readTextFile(new URL("../fixtures/claude_code/episode.json", import.meta.url)),
).requests[0].body;

const NOTES = "<system-reminder>\nProject notes (CLAUDE.md):\n" +
  Array.from(
    { length: 110 },
    (_, i) => `- Rule ${i}: keep module ${i} small; test it in test/m${i}_test.ts.`,
  )
    .join("\n") +
  "\n</system-reminder>";

/** The first messages of a session: project notes and a task, as Claude Code sends them. */
export function opening(session: number): MessageParam[] {
  return [{
    role: "user",
    content: [{ type: "text", text: NOTES }, {
      type: "text",
      text: `Task ${session}: fix the build.`,
    }],
  }];
}

/** Appends `reply` and the agent's tool result for its call (output `salt` tells apart). */
// deno-lint-ignore no-explicit-any
export function answered(messages: MessageParam[], reply: any, salt: number): void {
  messages.push({ role: "assistant", content: reply.content });
  messages.push({
    role: "user",
    content: [{
      type: "tool_result",
      tool_use_id: reply.content[0].id,
      content: filler(RESULT_LINES, salt),
    }],
  });
}

/** The request body of a turn, as JSON. */
export function body(messages: MessageParam[]): string {
  return JSON.stringify({
    model: "bench",
    max_tokens: 256,
    system: recorded.system,
    tools: recorded.tools,
    messages,
  });
}

async function post(url: string, path: string, token: string, text: string) {
  const response = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: text,
  });
  const json = await response.json();
  if (!response.ok) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/**
 * Runs `count` sessions of `turns` turns at once against the gateway at `url`; returns their
 * ids, every turn's time at the client and the seconds it all took.
 */
export async function sweep(url: string, count: number, turns: number, salt: number) {
  const ids: string[] = [];
  const times: number[] = [];
  const started = performance.now();
  await Promise.all(Array.from({ length: count }, async (_, s) => {
    const session = await post(url, "/sessions", ADMIN, "{}");
    ids.push(session.id);
    const messages = opening(s);
    for (let turn = 0; turn < turns; turn++) {
      const text = body(messages);
      const at = performance.now();
      const reply = await post(url, "/v1/messages", session.token, text);
      times.push(performance.now() - at);
      answered(messages, reply, salt + s * 31 + turn);
    }
  }));
  return { ids, times, elapsed: (performance.now() - started) / 1000 };
}
