/**
 * The Claude Code episode recorded from the real CLI (fixtures/claude_code/episode.json, made by
 * fixtures/claude_code/record.ts) and its replay against a test gateway without the CLI.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Message } from "../lib/anthropic/mod.ts";
import type { TestGateway } from "./_gateway.ts";
import { sseMessage } from "./_sse.ts";

/** One request as the CLI sent it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Record<string, unknown> & { messages: { role: string; content: unknown }[] };
}

/** Where the recorded repository is said to be. */
export const REPO = "/tmp/replayed-repo";
/** The recorded requests, the CLI version, and the replies the model gave (Qwen3's format). */
export const episode = JSON.parse(
  (await Deno.readTextFile(new URL("../fixtures/claude_code/episode.json", import.meta.url)))
    .replaceAll("{{REPO}}", REPO),
) as { cli_version: string; replies: string[]; requests: RecordedRequest[] };

/**
 * Sends the recorded requests in order. Assistant messages are the replies this gateway gave,
 * in place of the recorded ones (their tool-use ids and signatures belong to the recording), and
 * tool results point at the new tool-use ids.
 */
export async function replay(
  gw: TestGateway,
  token: string,
): Promise<{ replies: Message[]; last: RecordedRequest["body"] }> {
  const replies: Message[] = [];
  let last = episode.requests[0].body;
  const toolIds = new Map<string, string>();
  for (const recorded of episode.requests) {
    const body = structuredClone(recorded.body);
    let assistant = 0;
    for (const message of body.messages) {
      if (message.role === "assistant") {
        const callIds = (blocks: readonly { type: string; id?: string }[]) =>
          blocks.filter((block) => block.type === "tool_use").map((block) => block.id!);
        const fresh = replies[assistant++].content;
        const freshIds = callIds(fresh);
        callIds(message.content as { type: string; id?: string }[]).forEach((id, i) =>
          toolIds.set(id, freshIds[i])
        );
        message.content = fresh;
      } else if (Array.isArray(message.content)) {
        for (const block of message.content as { tool_use_id?: string }[]) {
          if (block.tool_use_id) block.tool_use_id = toolIds.get(block.tool_use_id)!;
        }
      }
    }
    const response = await gw.fetch(recorded.path, {
      method: recorded.method,
      headers: { ...recorded.headers, authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 200);
    replies.push(sseMessage(await response.text()));
    last = body;
  }
  return { replies, last };
}
