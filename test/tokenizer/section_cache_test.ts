/**
 * Long text sections keep their tokens across requests: a cached section encodes to exactly what
 * a tokenizer that never saw it gives, each section once, and the cache stays within its bound.
 */
import assert from "node:assert/strict";
import { SectionCache } from "../../lib/tokenizer/section_cache.ts";
import { defaultTokenizerPath } from "../../lib/config/mod.ts";
import { loadTokenizer } from "../../lib/tokenizer/mod.ts";
import { renderPrompt } from "../../lib/template/mod.ts";
import type { ChatPrompt } from "../../lib/chat/mod.ts";

/** A cache over a counting encoder that spells each character's code. */
function counting(options = { minChars: 4, capacityBytes: 250 }) {
  const calls: [string, number][] = [];
  const cache = new SectionCache((text, section) => {
    calls.push([text, section]);
    return [...text].map((c) => c.charCodeAt(0) + section);
  }, options);
  return { cache, calls };
}

Deno.test("SectionCache encodes a long section once per section index, and short ones every time", () => {
  const { cache, calls } = counting();
  assert.deepEqual(cache.encode("abcdef", 0), [97, 98, 99, 100, 101, 102]);
  assert.deepEqual(cache.encode("abcdef", 0), [97, 98, 99, 100, 101, 102]);
  assert.deepEqual(cache.encode("abcdef", 2), [99, 100, 101, 102, 103, 104]);
  assert.deepEqual(cache.encode("abc", 0), [97, 98, 99]);
  assert.deepEqual(cache.encode("abc", 0), [97, 98, 99]);
  assert.deepEqual(calls, [["abcdef", 0], ["abcdef", 2], ["abc", 0], ["abc", 0]]);
});

Deno.test("SectionCache drops the least recently used sections past its capacity in bytes", () => {
  const { cache, calls } = counting({ minChars: 4, capacityBytes: 250 });
  // 8 characters with its key, 6 tokens of 8 bytes and two objects' overhead: 120 bytes
  cache.encode("aaaaaa", 0);
  cache.encode("bbbbbb", 0); // 240
  cache.encode("aaaaaa", 0); // a hit: "a" is now the most recent
  cache.encode("cccccc", 0); // 360 > 250: "b" goes
  assert.deepEqual(cache.stats().bytes, 240);
  assert.equal(cache.held, 16);
  cache.encode("aaaaaa", 0);
  cache.encode("bbbbbb", 0);
  assert.deepEqual(calls.map(([text]) => text[0]), ["a", "b", "c", "b"]);
  cache.encode("x".repeat(30), 0); // larger than the whole cache (336 bytes): encoded, not kept
  cache.encode("x".repeat(30), 0);
  assert.equal(calls.filter(([text]) => text[0] === "x").length, 2);
});

Deno.test("SectionCache weighs text outside Latin-1 at two bytes a character", () => {
  const { cache } = counting({ minChars: 4, capacityBytes: 1_000 });
  cache.encode("\u00e9t\u00e9s", 0); // Latin-1: a byte a character (6 with its key)
  assert.equal(cache.stats().bytes, 6 + 8 * 4 + 64);
  cache.encode("\u4f60\u597d\u4e16\u754c", 1); // two bytes a character
  assert.equal(cache.stats().bytes, 6 + 8 * 4 + 64 + 2 * 6 + 8 * 4 + 64);
});

Deno.test("a Claude-Code-sized prompt renders to the same tokens through the cache as without it", async () => {
  const recorded = JSON.parse(
    await Deno.readTextFile(new URL("../../fixtures/claude_code/episode.json", import.meta.url)),
  ).requests[0].body;
  const system = recorded.system.map((block: { text: string }) => block.text).join("\n");
  const tools = recorded.tools.map((
    tool: { name: string; description: string; input_schema: unknown },
  ) => ({
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.input_schema },
  }));
  const prompt = (task: string): ChatPrompt => ({
    messages: [{ role: "system", content: system }, { role: "user", content: task }],
    tools,
  });
  const warm = await loadTokenizer(defaultTokenizerPath());
  const first = renderPrompt(warm, prompt("Fix the build."));
  const second = renderPrompt(warm, prompt("Write the docs.")); // the system and tools cached
  for (
    const [task, rendered] of [["Fix the build.", first], ["Write the docs.", second]] as const
  ) {
    const cold = await loadTokenizer(defaultTokenizerPath());
    assert.deepEqual(rendered.tokens, renderPrompt(cold, prompt(task)).tokens, task);
  }
  assert.ok(first.tokens.length > 8_000, `${first.tokens.length} tokens`);
});
