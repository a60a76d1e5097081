/**
 * Agents' recurring fields (their tools and system prompt, sent again verbatim every turn) are
 * parsed and validated once per text (`RecurringFields`): the tokens recorded and every answer,
 * refusals included, are those of a gateway that parses each body whole.
 */
import assert from "node:assert/strict";
import { RecurringFields } from "../../lib/cache/mod.ts";
import { MAX_JSON_DEPTH, MAX_TOOL_NAME_CHARS } from "../../lib/limits/mod.ts";
import { episode, replay } from "../_claude_episode.ts";
import { startGateway, type TestGateway } from "../_gateway.ts";

/** A memo that never holds anything: every body parsed whole, as before it existed. */
const none = () =>
  new RecurringFields({ capacityChars: 0, minChars: 1, maxValues: 0, accepts: () => true });

Deno.test("the recorded Claude Code episode parses its system prompt and tools once and records the same tokens", async () => {
  const held = await startGateway({ script: [...episode.replies, ...episode.replies] });
  const whole = await startGateway({ script: episode.replies, recurringFields: none() });
  try {
    for (const gw of [held, held, whole]) await replay(gw, (await gw.openSession()).token);
    assert.deepEqual(held.deps.recurringFields.size.values, 2, "the system prompt and the tools");
    assert.deepEqual(whole.deps.recurringFields.size.values, 0);
    const prompts = (gw: TestGateway) => gw.engine.calls.map((call) => call.inputIds);
    const [first, second] = [
      prompts(held).slice(0, episode.requests.length),
      prompts(held).slice(episode.requests.length),
    ];
    assert.deepEqual(first, prompts(whole));
    assert.deepEqual(second, prompts(whole));
  } finally {
    await held.close();
    await whole.close();
  }
});

Deno.test("bad bodies whose tools or system prompt are held are refused as a whole parse refuses them", async () => {
  const held = await startGateway({ script: () => "Done." });
  const whole = await startGateway({ script: () => "Done.", recurringFields: none() });
  const tools = Array.from({ length: 8 }, (_, i) => ({
    name: `tool_${i}`,
    description: `Tool number ${i}, described at some length so the list is worth holding.`,
    input_schema: { type: "object", properties: { arg: { type: "string" } } },
  }));
  const system = [{ type: "text", text: "You are a careful agent.\n".repeat(60) }];
  const good = { model: "qwen3", max_tokens: 16, system, tools };
  let deep: unknown = {};
  for (let i = 0; i < MAX_JSON_DEPTH; i++) deep = { d: deep };
  const bad: Record<string, unknown>[] = [
    { ...good, messages: [{ role: "user", content: 7 }] },
    { ...good, messages: [{ role: "user", content: "hi" }], max_tokens: -1 },
    { ...good, messages: [] },
    {
      ...good,
      tools: [...tools, { name: "x".repeat(MAX_TOOL_NAME_CHARS + 1), input_schema: {} }],
      messages: [{ role: "user", content: "hi" }],
    },
    { ...good, tools: [...tools, { name: "deep", input_schema: deep }], messages: [] },
    { ...good, system: [{ type: "image", text: "x".repeat(2000) }], messages: [] },
  ];
  try {
    const answers = async (gw: TestGateway) => {
      const { token } = await gw.openSession();
      const send = async (body: unknown) => {
        const response = await gw.fetch("/v1/messages", {
          method: "POST",
          headers: { "x-api-key": token, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        return `${response.status} ${await response.text()}`;
      };
      const out: string[] = [];
      for (const body of bad) {
        // A good turn first, so its system prompt and tools are held when the bad one comes.
        out.push(await send({ ...good, messages: [{ role: "user", content: "hello" }] }));
        out.push(await send(body));
      }
      return out.map((answer) => answer.replace(/"(msg|req)_[0-9a-f]+"/g, '"$1_…"'));
    };
    const fromHeld = await answers(held);
    assert.deepEqual(fromHeld, await answers(whole));
    assert.deepEqual(
      fromHeld.map((answer) => answer.slice(0, 3)),
      ["200", "400", "200", "400", "200", "400", "200", "400", "200", "400", "200", "400"],
    );
    // The good system prompt and tools, the tools with a long name and the image system prompt
    // (held, their failed validation with them); never the tools nested too deep.
    assert.equal(held.deps.recurringFields.size.values, 4);
  } finally {
    await held.close();
    await whole.close();
  }
});
