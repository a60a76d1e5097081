import assert from "node:assert/strict";
import {
  derivedOnce,
  HELD_BYTES_PER_CHAR,
  RecurringFields,
  type RecurringFieldsOptions,
  recurringToken,
} from "../../lib/cache/mod.ts";
import { jsonShapeProblem } from "../../lib/limits/mod.ts";
import { collisionCase, heldTexts } from "../_fuzz/collisions.ts";
import { Prng } from "../_fuzz/prng.ts";

const MAX_DEPTH = 16;

const OPTIONS: RecurringFieldsOptions = {
  capacityBytes: 1 << 22,
  minChars: 64,
  maxValues: 8,
  accepts: (value) => jsonShapeProblem(value, MAX_DEPTH - 1) === null,
};

/** A tool list of `count` tools, some 200 characters each. */
const toolList = (count: number, tag = "t") =>
  Array.from({ length: count }, (_, i) => ({
    name: `${tag}_${i}`,
    description: `Tool ${i}: does the ${i}th thing ("quoted", \\ and ünïcode).`,
    input_schema: { type: "object", properties: { path: { type: "string" } } },
  }));

const SYSTEM = [{ type: "text", text: "You are an agent.\n".repeat(10) }];

/** An agent's turn `n`: the history grows, the system prompt and tools stay. */
function turnBody(n: number, order: "tools first" | "messages first", tools = toolList(4)) {
  const messages = Array.from({ length: 2 * n + 1 }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: `message ${i} ${"x".repeat(i * 7)}`,
  }));
  const body = order === "tools first"
    ? { model: "m", max_tokens: 32, system: SYSTEM, tools, messages }
    : { model: "m", messages, system: SYSTEM, tools, metadata: { user_id: "u" }, stream: true };
  return JSON.stringify(body);
}

type Body = Record<string, unknown>;

for (const order of ["tools first", "messages first"] as const) {
  Deno.test(`RecurringFields: with ${order}, later turns take the system prompt and tools from the memo, equal to JSON.parse`, () => {
    const memo = new RecurringFields(OPTIONS);
    const first = memo.parse(turnBody(0, order), ["system", "tools"]);
    assert.deepEqual(first.value, JSON.parse(turnBody(0, order)));
    assert.deepEqual([...first.held.keys()], ["system", "tools"]);
    const tools = (first.value as Body).tools;
    assert.ok(Object.isFrozen(tools) && Object.isFrozen((tools as Body[])[0].input_schema));
    for (let n = 1; n < 6; n++) {
      const text = turnBody(n, order);
      const next = memo.parse(text, ["system", "tools"]);
      assert.deepEqual(next.value, JSON.parse(text));
      assert.deepEqual([...next.held.keys()].sort(), ["system", "tools"]);
      assert.equal((next.value as Body).tools, tools, "the same held value");
      assert.ok(!Object.isFrozen(next.value), "the body itself is the request's own");
    }
    assert.deepEqual(memo.size, {
      values: 2,
      chars: JSON.stringify(toolList(4)).length + JSON.stringify(SYSTEM).length,
    });
  });
}

Deno.test("RecurringFields: a changed tool list is parsed and learned; the system prompt still comes from the memo", () => {
  const memo = new RecurringFields(OPTIONS);
  memo.parse(turnBody(1, "messages first"), ["system", "tools"]);
  const text = turnBody(2, "messages first", toolList(5));
  const next = memo.parse(text, ["system", "tools"]);
  assert.deepEqual(next.value, JSON.parse(text));
  assert.deepEqual([...next.held.keys()].sort(), ["system", "tools"]);
  assert.equal(memo.size.values, 3);
});

Deno.test("RecurringFields: whitespace, a pretty-printing client, a nested look-alike and duplicate keys all parse as JSON.parse does", () => {
  const memo = new RecurringFields(OPTIONS);
  const tools = toolList(3);
  const json = JSON.stringify(tools);
  const bodies = [
    `{"tools":${json},"messages":[]}`,
    `{"tools" :  ${json} ,"messages":[1]}`,
    JSON.stringify({ tools, messages: [2] }, null, 2),
    // The tools' text as a nested value, where the top-level field was last time.
    `{"other":${json},"tools":[],"messages":[3]}`,
    `{"tools":${json},"messages":[{"tools":${json}}]}`,
    // JSON.parse keeps the last of two fields of one name.
    `{"tools":${json},"tools":[{"name":"last"}],"messages":[]}`,
    `{"tools":[{"name":"first"}],"tools":${json},"messages":[]}`,
    `{"tools":${json},"messages":["recurring-field-"]}`,
    `{"messages":[],"tools":${json}}`,
  ];
  for (let round = 0; round < 2; round++) {
    for (const text of bodies) {
      assert.deepEqual(memo.parse(text, ["tools"]).value, JSON.parse(text));
    }
  }
});

Deno.test("RecurringFields: a field's held text under the other field's key is not taken for it", () => {
  const memo = new RecurringFields(OPTIONS);
  const system = JSON.stringify([{ type: "text", text: "You are an agent.\n".repeat(10) }]);
  const tools = JSON.stringify(toolList(4));
  const first = `{"system":${system},"tools":${tools},"messages":[1]}`;
  memo.parse(first, ["system", "tools"]);
  // The system prompt where it was from the start, the tools where they were from the end: each
  // under the other's key ("tools": is one character shorter than "system":, hence the space).
  const swapped = `{"tools": ${system},"system":${tools},"messages":[1]}`;
  assert.equal(swapped.indexOf(system), first.indexOf(system));
  assert.equal(swapped.length - swapped.indexOf(tools), first.length - first.indexOf(tools));
  const parsed = memo.parse(swapped, ["system", "tools"]);
  assert.deepEqual(parsed.value, JSON.parse(swapped));
  for (const [key, held] of parsed.held) {
    assert.deepEqual(held.value, (JSON.parse(swapped) as Body)[key], key);
  }
});

Deno.test("RecurringFields: bodies built to collide with held offsets parse exactly as JSON.parse does", () => {
  const prng = new Prng(20261128);
  const texts = heldTexts(prng);
  const memo = new RecurringFields({ ...OPTIONS, minChars: 1024, maxValues: 16 });
  const keys = ["system", "tools"];
  const families = new Map<string, number>();
  let aligned = 0;
  for (let i = 0; i < 5_000; i++) {
    const sample = collisionCase(prng, texts);
    memo.parse(sample.teach, keys);
    if (sample.aligned) aligned++;
    families.set(sample.family, (families.get(sample.family) ?? 0) + 1);
    let expected: unknown;
    let failure: string | null = null;
    try {
      expected = JSON.parse(sample.body);
    } catch (error) {
      failure = (error as Error).message;
    }
    const context = `${sample.family}: ${sample.body.slice(0, 120)}`;
    if (failure !== null) {
      assert.throws(() => memo.parse(sample.body, keys), { message: failure }, context);
      continue;
    }
    const parsed = memo.parse(sample.body, keys);
    assert.deepEqual(parsed.value, expected, context);
    for (const [key, held] of parsed.held) {
      assert.equal((parsed.value as Body)[key], held.value, context);
      assert.deepEqual(held.value, (expected as Body)[key], context);
    }
  }
  assert.ok(aligned > 4_000, `${aligned} of 5000 bodies put held text where the memo looks`);
  assert.ok(families.size >= 10, [...families.keys()].join(", "));
});

Deno.test("RecurringFields: a body that is not JSON throws JSON.parse's error, held fields or not", () => {
  const memo = new RecurringFields(OPTIONS);
  const good = turnBody(1, "tools first");
  memo.parse(good, ["system", "tools"]);
  for (const bad of [good.slice(0, -1), `${good}x`, good.replace('"messages"', "messages")]) {
    let expected: unknown;
    try {
      JSON.parse(bad);
    } catch (error) {
      expected = error;
    }
    assert.throws(() => memo.parse(bad, ["system", "tools"]), (error: Error) => {
      assert.equal(error.message, (expected as Error).message);
      return true;
    });
  }
});

Deno.test("RecurringFields: a value nested too deep, small, or not an object is never held", () => {
  const memo = new RecurringFields(OPTIONS);
  let deep: unknown = "x".repeat(100);
  for (let i = 0; i < MAX_DEPTH; i++) deep = [deep];
  for (let round = 0; round < 2; round++) {
    for (const tools of [deep, [{ name: "a" }], "y".repeat(200)]) {
      const text = JSON.stringify({ tools, messages: [] });
      const parsed = memo.parse(text, ["tools"]);
      assert.deepEqual(parsed.value, JSON.parse(text));
      assert.equal(parsed.held.size, 0);
    }
  }
  assert.equal(memo.size.values, 0);
});

Deno.test("RecurringFields: held values are bounded in number and bytes, the least recently used going first", () => {
  const memo = new RecurringFields({ ...OPTIONS, maxValues: 3 });
  const lists = Array.from({ length: 5 }, (_, i) => toolList(2, `set${i}`));
  for (const tools of lists) memo.parse(JSON.stringify({ tools, messages: [] }), ["tools"]);
  assert.equal(memo.size.values, 3);
  const capacityBytes = 4 * HELD_BYTES_PER_CHAR * JSON.stringify(lists[0]).length;
  const bytes = new RecurringFields({ ...OPTIONS, capacityBytes });
  for (const tools of lists) {
    bytes.parse(JSON.stringify({ tools, messages: [] }), ["tools"]);
    assert.ok(bytes.stats().bytes <= capacityBytes, `${bytes.stats().bytes} > ${capacityBytes}`);
  }
  assert.ok(bytes.size.values >= 3, `${bytes.size.values} held`);
  // The most recent list is held: its next body takes it from the memo.
  const again = memo.parse(JSON.stringify({ tools: lists[4], messages: [1] }), ["tools"]);
  assert.equal(again.held.size, 1);
  const gone = memo.parse(JSON.stringify({ tools: lists[0], messages: [1] }), ["tools"]);
  assert.equal(gone.held.size, 1, "learned again");
});

Deno.test("RecurringFields: a client whose fields are never found pauses learning, then tries now and then", () => {
  const memo = new RecurringFields(OPTIONS);
  const pretty = (n: number) => JSON.stringify({ tools: toolList(3), messages: [n] }, null, 1);
  for (let n = 0; n < 70; n++) {
    assert.equal(memo.parse(pretty(n), ["tools"]).held.size, 0);
  }
  // Learning is paused: a compact client's tools wait for the next try…
  const compact = JSON.stringify({ tools: toolList(3), messages: [] });
  let tries = 0;
  while (memo.parse(compact, ["tools"]).held.size === 0) tries++;
  assert.ok(tries > 0 && tries < 64, `${tries} bodies before a try`);
  // …and once learned, every body takes them from the memo.
  assert.equal(memo.parse(compact, ["tools"]).held.size, 1);
});

Deno.test("RecurringFields: seeded random bodies parse exactly as JSON.parse does", () => {
  const random = new Prng(20261127);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random.next() * items.length)];
  const memo = new RecurringFields({ ...OPTIONS, maxValues: 4 });
  const lists = Array.from({ length: 6 }, (_, i) => toolList(1 + i, `r${i}`));
  for (let i = 0; i < 400; i++) {
    const fields: [string, unknown][] = [
      ["model", "m"],
      ["messages", Array.from({ length: Math.floor(random.next() * 5) }, () => pick(lists))],
      ["tools", pick(lists)],
      ["system", pick([SYSTEM, "plain", lists[0]])],
    ];
    fields.sort(() => random.next() - 0.5);
    let text = JSON.stringify(Object.fromEntries(fields), null, pick([0, 0, 0, 1]));
    // Now and then a look-alike field or a second field of the same name.
    if (random.next() < 0.2) text = text.replace(/^\{/, `{"tool":${JSON.stringify(pick(lists))},`);
    if (random.next() < 0.2) text = text.replace(/\}$/, `,"tools":${JSON.stringify(pick(lists))}}`);
    const parsed = memo.parse(text, ["tools", "system"]);
    assert.deepEqual(parsed.value, JSON.parse(text), text.slice(0, 200));
    for (const [key, held] of parsed.held) assert.equal((parsed.value as Body)[key], held.value);
  }
});

Deno.test("derivedOnce() computes once for a held value; recurringToken() names held values only", () => {
  const memo = new RecurringFields(OPTIONS);
  const text = turnBody(0, "tools first");
  const tools = (memo.parse(text, ["tools"]).value as Body).tools as { name: string }[];
  let calls = 0;
  const names = (list: readonly { name: string }[]) => (calls++, list.map((tool) => tool.name));
  const first = derivedOnce(tools, names);
  assert.equal(derivedOnce(tools, names), first);
  assert.equal(calls, 1);
  assert.ok(Object.isFrozen(first));
  assert.match(recurringToken(tools)!, /^recurring:/);
  assert.match(recurringToken(first)!, /^recurring:/);
  assert.notEqual(recurringToken(first), recurringToken(tools));
  const fresh = structuredClone(tools);
  assert.equal(recurringToken(fresh), undefined);
  assert.deepEqual(derivedOnce(fresh, names), first);
  assert.equal(calls, 2);
});

Deno.test("RecurringValue.validated() checks once per schema and holds only success", () => {
  const memo = new RecurringFields(OPTIONS);
  const { held } = memo.parse(turnBody(0, "tools first"), ["tools"]);
  const field = held.get("tools")!;
  let checks = 0;
  const ok = {};
  const check = (value: unknown) => (checks++, { success: true as const, data: [value] });
  const valid = field.validated(ok, check);
  assert.deepEqual(valid?.data, [field.value]);
  assert.equal(field.validated(ok, check), valid);
  assert.ok(Object.isFrozen(valid!.data));
  assert.equal(checks, 1);
  const failing = {};
  assert.equal(field.validated(failing, () => ({ success: false as const })), null);
  assert.equal(field.validated(failing, check), null, "a failure is remembered too");
});
