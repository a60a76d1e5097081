import assert from "node:assert/strict";
import { classify } from "../../lib/chain/classify.ts";
import { prefixDigests } from "../../lib/chat/prefix_digest.ts";

const START = "system: You are a coding agent.|tools: bash,edit";
const MESSAGES = [
  '{"role":"user","content":"Fix the bug"}',
  '{"role":"assistant","content":"I will run the tests."}',
  '{"role":"user","content":"tool_result: 3 failed"}',
  '{"role":"assistant","content":"Patched."}',
];

Deno.test("classify() starts a chain when there is none", () => {
  assert.deepEqual(classify(null, prefixDigests(START, MESSAGES)), { kind: "start" });
  assert.deepEqual(classify(null, ["d0"]), { kind: "start" });
});

Deno.test("classify() appends the messages after the chain's history", () => {
  const digests = prefixDigests(START, MESSAGES.slice(0, 3));
  const chainDigests = prefixDigests(START, MESSAGES.slice(0, 2));
  assert.deepEqual(classify({ messageCount: 2, digest: chainDigests[2] }, digests), {
    kind: "append",
    from: 2,
  });
  assert.deepEqual(classify({ messageCount: 2, digest: "d2" }, ["d0", "d1", "d2", "d3", "d4"]), {
    kind: "append",
    from: 2,
  });
});

Deno.test("classify() appends to a chain that holds only the conversation's start", () => {
  const digests = prefixDigests(START, MESSAGES.slice(0, 1));
  assert.deepEqual(classify({ messageCount: 0, digest: digests[0] }, digests), {
    kind: "append",
    from: 0,
  });
});

Deno.test("classify() diverges when an earlier message was edited", () => {
  const chain = prefixDigests(START, MESSAGES.slice(0, 2));
  const edited = [MESSAGES[0], '{"role":"assistant","content":"Something else."}', MESSAGES[2]];
  assert.deepEqual(classify({ messageCount: 2, digest: chain[2] }, prefixDigests(START, edited)), {
    kind: "diverge",
  });
});

Deno.test("classify() diverges when the system prompt or tools changed", () => {
  const chain = prefixDigests(START, MESSAGES.slice(0, 2));
  const request = prefixDigests(`${START},grep`, MESSAGES.slice(0, 3));
  assert.deepEqual(classify({ messageCount: 2, digest: chain[2] }, request), { kind: "diverge" });
});

Deno.test("classify() diverges when the request adds no message to the chain", () => {
  const digests = prefixDigests(START, MESSAGES.slice(0, 2));
  assert.deepEqual(classify({ messageCount: 2, digest: digests[2] }, digests), { kind: "diverge" });
});

Deno.test("classify() diverges when the request is shorter than the chain", () => {
  const chain = prefixDigests(START, MESSAGES);
  const request = prefixDigests(START, MESSAGES.slice(0, 1));
  assert.deepEqual(classify({ messageCount: 4, digest: chain[4] }, request), { kind: "diverge" });
});
