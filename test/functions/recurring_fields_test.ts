/**
 * Agents' recurring fields (their tools and system prompt, sent again verbatim every turn) are
 * parsed and validated once per text (`RecurringFields`): the tokens recorded and every answer,
 * refusals included, are those of a gateway that parses each body whole.
 */
import assert from "node:assert/strict";
import { RecurringFields } from "../../lib/cache/mod.ts";
import { MAX_JSON_DEPTH, MAX_TOOL_NAME_CHARS } from "../../lib/limits/mod.ts";
import { episode, replay } from "../_claude_episode.ts";
import { collisionCase, heldTexts } from "../_fuzz/collisions.ts";
import { Prng, runSeed } from "../_fuzz/prng.ts";
import { startGateway, type TestGateway } from "../_gateway.ts";

/** A memo that never holds anything: every body parsed whole, as before it existed. */
const none = () =>
  new RecurringFields({ capacityBytes: 0, minChars: 1, maxValues: 0, accepts: () => true });

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

/** A text-block list that is a tool list too (loose objects take both shapes), ≥ 1 KB. */
const dual = (tag: string, n: number) =>
  JSON.stringify(Array.from({ length: n }, (_, i) => ({
    type: "text",
    text: `${tag} ${i}: read the repository, run the tests and fix what fails. `.repeat(3),
    name: `${tag}_${i}`,
    input_schema: { type: "object", properties: { path: { type: "string" } } },
  })));

/** `body` as the gateway answers it: status and body, ids made stable. */
async function answerOf(gw: TestGateway, token: string, body: string): Promise<string> {
  const response = await gw.fetch("/v1/messages", {
    method: "POST",
    headers: { "x-api-key": token, "content-type": "application/json" },
    body,
  });
  return `${response.status} ${await response.text()}`
    .replace(/"(msg|req|toolu)_[0-9A-Za-z]+"/g, '"$1_…"');
}

Deno.test("a body with each field's held text under the other's key is answered and recorded as a fresh gateway answers it", async () => {
  const held = await startGateway({ script: () => "Done." });
  const fresh = await startGateway({ script: () => "Done." });
  try {
    // Valid as either field: the body is served, and must be served as sent.
    const s = dual("system", 6);
    const t = dual("tool", 9);
    const teach = `{"model":"qwen3","max_tokens":4,"system":${s},"tools":${t},` +
      `"messages":[{"role":"user","content":"First."}]}`;
    const swapped = `{"model":"qwen3","max_tokens":4,"tools": ${s},"system":${t},` +
      `"messages":[{"role":"user","content":"First."}]}`;
    assert.equal(swapped.indexOf(s), teach.indexOf(s));
    assert.equal(swapped.length - swapped.indexOf(t), teach.length - teach.indexOf(t));
    assert.match(await answerOf(held, (await held.openSession()).token, teach), /^200 /);
    assert.equal(held.deps.recurringFields.size.values, 2);
    const { id, token } = await held.openSession();
    const fromHeld = await answerOf(held, token, swapped);
    const fromFresh = await answerOf(fresh, (await fresh.openSession()).token, swapped);
    assert.equal(fromHeld, fromFresh);
    assert.match(fromHeld, /^200 /);
    const prompt = held.engine.calls.at(-1)!.inputIds;
    assert.deepEqual(prompt, fresh.engine.calls.at(-1)!.inputIds);
    const [sample] = await held.samples(id);
    assert.deepEqual(sample.prompt_ids, prompt);
    // The prompt starts with the system field as sent: the tool list's text blocks.
    const text = held.tokenizer.decode(prompt);
    assert.ok(text.startsWith("<|im_start|>system\ntool 0: read the repository"), text);

    // Valid only as sent the other way round: a 400, as a fresh gateway says.
    const system = JSON.stringify([{ type: "text", text: "Be careful. ".repeat(120) }]);
    const tools = JSON.stringify(Array.from({ length: 8 }, (_, i) => ({
      name: `tool_${i}`,
      description: "Does a thing. ".repeat(8),
      input_schema: { type: "object" },
    })));
    const good = `{"model":"qwen3","max_tokens":4,"system":${system},"tools":${tools},` +
      `"messages":[{"role":"user","content":"Go."}]}`;
    const bad = `{"model":"qwen3","max_tokens":4,"tools": ${system},"system":${tools},` +
      `"messages":[{"role":"user","content":"Go."}]}`;
    assert.equal(bad.indexOf(system), good.indexOf(system));
    assert.equal(bad.length - bad.indexOf(tools), good.length - good.indexOf(tools));
    assert.match(await answerOf(held, (await held.openSession()).token, good), /^200 /);
    const refused = await answerOf(held, (await held.openSession()).token, bad);
    assert.equal(refused, await answerOf(fresh, (await fresh.openSession()).token, bad));
    assert.match(refused, /^400 .*tools\.0\.name/);
  } finally {
    await held.close();
    await fresh.close();
  }
});

const COLLISIONS = Number(Deno.env.get("FUZZ_COLLISIONS") ?? 1_000);

Deno.test(`the memo gateway answers ${COLLISIONS} bodies built to collide with its held fields as a gateway without one does`, async () => {
  const held = await startGateway({ script: () => "Done." });
  const whole = await startGateway({ script: () => "Done.", recurringFields: none() });
  const seed = runSeed();
  const prng = new Prng(seed, 47);
  const texts = heldTexts(prng);
  try {
    const statuses = new Map<string, number>();
    let aligned = 0;
    for (let i = 0; i < COLLISIONS; i++) {
      const sample = collisionCase(prng, texts);
      if (sample.aligned) aligned++;
      // The teaching body in one session, the colliding one in a new one: the memo is the
      // process's, the sessions' histories the same on both gateways.
      await answerOf(held, (await held.openSession()).token, sample.teach);
      const calls = [held.engine.calls.length, whole.engine.calls.length];
      const fromHeld = await answerOf(held, (await held.openSession()).token, sample.body);
      const fromWhole = await answerOf(whole, (await whole.openSession()).token, sample.body);
      const context = `FUZZ_SEED=${seed} case ${i} (${sample.family}): ${
        sample.body.slice(0, 200)
      }`;
      assert.equal(fromHeld, fromWhole, context);
      assert.deepEqual(
        held.engine.calls.slice(calls[0]).map((call) => call.inputIds),
        whole.engine.calls.slice(calls[1]).map((call) => call.inputIds),
        context,
      );
      const status = fromHeld.slice(0, 3);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    assert.ok(aligned > COLLISIONS * 0.8, `${aligned} aligned of ${COLLISIONS}`);
    // Both outcomes occur: bodies served, and bodies refused.
    assert.ok((statuses.get("200") ?? 0) > COLLISIONS / 10, JSON.stringify([...statuses]));
    assert.ok((statuses.get("400") ?? 0) > COLLISIONS / 10, JSON.stringify([...statuses]));
  } finally {
    await held.close();
    await whole.close();
  }
});
