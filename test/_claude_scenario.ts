/**
 * The multi-chain Claude Code episodes recorded from the real CLI (fixtures/claude_code, made by
 * record.ts), and their replay against a test gateway without the CLI.
 *
 * @module
 */
import assert from "node:assert/strict";
import { messageIdentity } from "../lib/anthropic/mod.ts";
import type { RecordedScenario } from "../fixtures/claude_code/record.ts";
import type { TestGateway } from "./_gateway.ts";
import { sseMessage } from "./_sse.ts";

const REPO = "/tmp/replayed-repo";
const PAGE_URL = "https://127.0.0.1:4433/notes";

type Content = { type: string; id?: string; tool_use_id?: string; [key: string]: unknown }[];

/** A reply's content without what a regeneration changes (ids, signatures), to recognise it. */
function shape(content: Content): string {
  return messageIdentity({
    role: "assistant",
    content: content.map(({ id: _id, signature: _signature, ...rest }) => rest) as never,
  });
}

/**
 * Sends the recorded requests in order, each answered by the reply the engine gave it when it
 * was recorded. Assistant messages are swapped for this gateway's own replies (their ids and
 * signatures are this run's), and tool results point at the new tool-use ids.
 */
export async function replayScenario(gw: TestGateway, token: string, recorded: RecordedScenario) {
  const byShape = new Map<string, Content>();
  const ids = new Map<string, string>();
  let reply: string | null = null;
  gw.engine.setScript(() => reply ?? "(no recorded reply)");
  for (const request of recorded.requests) {
    const body = structuredClone(request.body);
    for (const message of body.messages) {
      if (!Array.isArray(message.content)) continue;
      const content = message.content as Content;
      if (message.role === "assistant") message.content = byShape.get(shape(content)) ?? content;
      for (const block of content) {
        if (block.tool_use_id && ids.has(block.tool_use_id)) {
          block.tool_use_id = ids.get(block.tool_use_id);
        }
      }
    }
    reply = request.reply;
    const response = await gw.fetch(request.path, {
      method: request.method,
      headers: { ...request.headers, authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    assert.equal(response.status, 200, await response.clone().text());
    const text = await response.text();
    const message = text.startsWith("event:") ? sseMessage(text) : JSON.parse(text);
    if (request.response) {
      const old = request.response.content as Content;
      byShape.set(shape(old), message.content);
      old.forEach((block, i) => block.id && ids.set(block.id, message.content[i].id));
    }
  }
}

/** The recorded scenario `name` (`subagent`, `parallel`, `compaction`, `side`). */
export async function readScenario(name: string): Promise<RecordedScenario> {
  const file = new URL(`../fixtures/claude_code/${name}.json`, import.meta.url);
  return JSON.parse(
    (await Deno.readTextFile(file)).replaceAll("{{REPO}}", REPO).replaceAll(
      "{{PAGE_URL}}",
      PAGE_URL,
    ),
  );
}
