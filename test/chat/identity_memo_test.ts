import assert from "node:assert/strict";
import { messageIdentities, type MessageParam } from "../../lib/anthropic/mod.ts";
import { IdentityMemo, jsonEqual } from "../../lib/chat/mod.ts";

/** The memo's identities with the Anthropic identity, and how many it was given as known. */
function identify(memo: IdentityMemo, key: string, messages: MessageParam[]) {
  let known = -1;
  const identities = memo.identities(key, messages, (prefix) => {
    known = prefix.length;
    return messageIdentities(messages, prefix);
  });
  return { identities, known };
}

/** A tool-using conversation of `turns` calls, each answered by a result; ids from `prefix`. */
function conversation(turns: number, prefix = "toolu_"): MessageParam[] {
  const messages: MessageParam[] = [{ role: "user", content: "Fix the failing test." }];
  for (let i = 0; i < turns; i++) {
    messages.push({
      role: "assistant",
      content: [
        { type: "thinking", thinking: `step ${i}`, signature: "sig" },
        { type: "text", text: `Looking at file ${i}.` },
        { type: "tool_use", id: `${prefix}${i}`, name: "Read", input: { path: `f${i}.py` } },
      ],
    });
    messages.push({
      role: "user",
      content: [{ type: "tool_result", tool_use_id: `${prefix}${i}`, content: `line ${i}` }],
    });
  }
  return messages;
}

Deno.test("IdentityMemo reuses the identities of the messages a conversation resends", () => {
  const memo = new IdentityMemo(1 << 20);
  const first = conversation(2);
  assert.equal(identify(memo, "s", first).known, 0);
  // The next request: the same history, parsed again (new objects), and two more messages.
  const next = [...structuredClone(first), ...conversation(3).slice(first.length)];
  const { identities, known } = identify(memo, "s", next);
  assert.equal(known, first.length);
  assert.deepEqual(identities, messageIdentities(next));
});

Deno.test("IdentityMemo builds again from the first message that changed", () => {
  const memo = new IdentityMemo(1 << 20);
  const messages = conversation(4);
  identify(memo, "s", messages);
  const edited = structuredClone(messages);
  // Message 4 is the second tool result.
  (edited[4].content as { type: string; content: string }[])[0].content = "line 1, edited";
  const { identities, known } = identify(memo, "s", edited);
  assert.equal(known, 4);
  assert.deepEqual(identities, messageIdentities(edited));
  assert.notEqual(identities[4], messageIdentities(messages)[4]);
});

Deno.test("IdentityMemo's identities always equal those built from scratch", () => {
  // Requests as clients send them: appended turns, edits, rewinds, ids rewritten, keys moved,
  // thinking dropped, other conversations on the same key. Each is checked against a fresh build.
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed % n;
  };
  const memo = new IdentityMemo(1 << 20);
  let messages = conversation(3);
  for (let step = 0; step < 300; step++) {
    const next: MessageParam[] = structuredClone(messages);
    const at = random(next.length);
    switch (random(7)) {
      case 0: // an agent's next turn
        next.push(...conversation(next.length).slice(next.length, next.length + 2));
        break;
      case 1: // a rewind
        next.length = Math.max(1, at);
        break;
      case 2: // a message edited
        next[at] = { role: next[at].role, content: `edited ${step}` };
        break;
      case 3: // tool-call ids rewritten by the client, consistently
        next.splice(0, next.length, ...conversation((next.length - 1) >> 1, `call_${step}_`));
        break;
      case 4: // keys in another order
        next[at] = { content: next[at].content, role: next[at].role } as MessageParam;
        break;
      case 5: // thinking dropped from every reply
        for (const message of next) {
          if (Array.isArray(message.content)) {
            message.content = message.content.filter((block) => block.type !== "thinking");
          }
        }
        break;
      default: // another conversation on the same key
        next.splice(0, next.length, { role: "user", content: `other ${step}` });
    }
    if (next.at(-1)!.role === "assistant") next.pop();
    if (next.length === 0) next.push({ role: "user", content: "again" });
    assert.deepEqual(identify(memo, "s", next).identities, messageIdentities(next), `step ${step}`);
    messages = next;
  }
});

Deno.test("IdentityMemo keeps each key's last request apart", () => {
  const memo = new IdentityMemo(1 << 20);
  const main = conversation(2);
  const agent = conversation(1, "agent_");
  identify(memo, "s\nmain", main);
  identify(memo, "s\nagent", agent);
  assert.equal(identify(memo, "s\nmain", structuredClone(main)).known, main.length);
  assert.equal(identify(memo, "s\nagent", structuredClone(agent)).known, agent.length);
  assert.equal(identify(memo, "s\nother", structuredClone(main)).known, 0);
});

Deno.test("IdentityMemo weighs what it holds, thinking included, and drops past its capacity in bytes", () => {
  // 4 bytes a character held (the text and its parse): 50,000 characters.
  const memo = new IdentityMemo(200_000);
  const heavy: MessageParam[] = [
    { role: "user", content: "hi" },
    {
      role: "assistant",
      content: [
        // Left out of the identity, but held with the message: it counts.
        { type: "thinking", thinking: "x".repeat(30_000), signature: "sig" },
        { type: "text", text: "hello" },
      ],
    },
    { role: "user", content: "and?" },
  ];
  identify(memo, "a", heavy);
  assert.ok(memo.held > 30_000, `held ${memo.held}`);
  identify(memo, "b", structuredClone(heavy));
  assert.ok(memo.stats().bytes <= 200_000, `${memo.stats().bytes} bytes`);
  assert.equal(memo.stats().bytes, 4 * memo.held);
  // "a", the least recently used, went to make room for "b".
  assert.equal(identify(memo, "a", structuredClone(heavy)).known, 0);
  // Heavier than the whole capacity: built, never held.
  const huge = [{ role: "user" as const, content: "y".repeat(60_000) }];
  identify(memo, "c", huge);
  assert.equal(identify(memo, "c", structuredClone(huge)).known, 0);
});

Deno.test("jsonEqual() is exact: values, array lengths, key sets and key order", () => {
  assert.ok(jsonEqual({ a: [1, "x", null, { b: true }] }, { a: [1, "x", null, { b: true }] }));
  assert.ok(!jsonEqual({ a: [1, 2] }, { a: [1, 2, 3] }));
  assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: undefined }));
  assert.ok(!jsonEqual({ a: 1, b: 2 }, { b: 2, a: 1 }));
  assert.ok(!jsonEqual({ a: "1" }, { a: 1 }));
  assert.ok(!jsonEqual([], {}));
  assert.ok(!jsonEqual({}, []));
  assert.ok(!jsonEqual(null, {}));
  assert.ok(!jsonEqual({ text: "a\u0000" }, { text: "a" }));
});
