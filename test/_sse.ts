/**
 * Reads an Anthropic SSE body back into the message it streams, checking the event grammar
 * on the way (the SDK's accumulator does the same for real clients).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ContentBlock, Message } from "../lib/anthropic/mod.ts";

/** The events of an SSE body, `ping` included. */
export function sseEvents(text: string): { event: string; data: Record<string, unknown> }[] {
  return text.split("\n\n").filter((frame) => frame.trim().length > 0).map((frame) => {
    const [eventLine, dataLine] = frame.split("\n");
    assert.match(eventLine, /^event: /);
    const data = JSON.parse(dataLine.replace(/^data: /, ""));
    assert.equal(data.type, eventLine.slice(7));
    return { event: eventLine.slice(7), data };
  });
}

/** The message an SSE body streams. */
export function sseMessage(text: string): Message {
  let message: Message | null = null;
  const json: string[] = [];
  for (const { event, data } of sseEvents(text)) {
    if (event === "message_start") message = structuredClone(data.message) as Message;
    if (event === "content_block_start") {
      assert.equal(data.index, message!.content.length, "dense block indexes");
      message!.content.push(structuredClone(data.content_block) as ContentBlock);
      json[data.index as number] = "";
    }
    if (event === "content_block_delta") {
      const block = message!.content[data.index as number] as Record<string, unknown>;
      const delta = data.delta as Record<string, string>;
      if (delta.type === "text_delta") block.text += delta.text;
      if (delta.type === "thinking_delta") block.thinking += delta.thinking;
      if (delta.type === "signature_delta") block.signature = delta.signature;
      if (delta.type === "input_json_delta") json[data.index as number] += delta.partial_json;
    }
    if (event === "content_block_stop") {
      const block = message!.content[data.index as number];
      if (block.type === "tool_use") block.input = JSON.parse(json[data.index as number] || "{}");
    }
    if (event === "message_delta") {
      Object.assign(message!, data.delta);
      Object.assign(message!.usage, data.usage);
    }
  }
  assert.ok(message, "message_start");
  assert.ok(text.includes("event: message_stop"), "message_stop");
  return message;
}
