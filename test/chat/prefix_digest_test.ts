import assert from "node:assert/strict";
import { extendDigest, prefixDigests } from "../../lib/chat/mod.ts";

const START = '{"system":"You are careful.","tools":[]}';
const MESSAGES = [
  '{"content":[{"text":"hi","type":"text"}],"role":"user"}',
  '{"content":[{"text":"hello","type":"text"}],"role":"assistant"}',
  '{"content":[{"text":"list files","type":"text"}],"role":"user"}',
  '{"content":[{"text":"done","type":"text"}],"role":"assistant"}',
];

Deno.test("prefixDigests() gives one 128-bit hex digest per prefix, the start included", () => {
  const digests = prefixDigests(START, MESSAGES);
  assert.equal(digests.length, MESSAGES.length + 1);
  for (const digest of digests) assert.match(digest, /^[0-9a-f]{32}$/);
  assert.equal(new Set(digests).size, digests.length);
  assert.deepEqual(prefixDigests(START, []), [digests[0]]);
});

Deno.test("prefixDigests() gives equal digests for equal prefixes", () => {
  const short = prefixDigests(START, MESSAGES.slice(0, 2));
  const long = prefixDigests(START, MESSAGES);
  assert.deepEqual(long.slice(0, 3), short);
  assert.deepEqual(prefixDigests(START, MESSAGES), long);
});

Deno.test("prefixDigests() changes the digests from a changed message on, and only those", () => {
  const base = prefixDigests(START, MESSAGES);
  for (let i = 0; i < MESSAGES.length; i++) {
    const changed = MESSAGES.map((message, j) =>
      j === i ? message.replace('"text":"', '"text":"!') : message
    );
    const digests = prefixDigests(START, changed);
    assert.deepEqual(digests.slice(0, i + 1), base.slice(0, i + 1), `message ${i}`);
    for (let k = i + 1; k < digests.length; k++) {
      assert.notEqual(digests[k], base[k], `message ${i}, digest ${k}`);
    }
  }
});

Deno.test("prefixDigests() changes every digest when the start changes", () => {
  const base = prefixDigests(START, MESSAGES);
  const other = prefixDigests('{"system":"You are bold.","tools":[]}', MESSAGES);
  base.forEach((digest, i) => assert.notEqual(other[i], digest, `digest ${i}`));
});

Deno.test("prefixDigests() depends on message boundaries, not only on their concatenation", () => {
  const joined = prefixDigests(START, ["ab"]);
  const split = prefixDigests(START, ["a", "b"]);
  assert.notEqual(split[2], joined[1]);
  assert.notEqual(prefixDigests(START, ["a\nb"])[1], split[2]);
});

Deno.test("extendDigest() matches prefixDigests() one message at a time", () => {
  const digests = prefixDigests(START, MESSAGES);
  let digest = prefixDigests(START, [])[0];
  MESSAGES.forEach((message, i) => {
    digest = extendDigest(digest, message);
    assert.equal(digest, digests[i + 1], `digest ${i + 1}`);
  });
});
