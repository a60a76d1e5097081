import assert from "node:assert/strict";
import { drainInto, OutputTail } from "../../lib/sandbox/output_tail.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** What a tail reports, in one object so a test compares it whole. */
function state(tail: OutputTail) {
  return { text: tail.text(), truncated: tail.truncated, total: tail.total };
}

Deno.test("OutputTail keeps every byte while the output stays within its cap", () => {
  const tail = new OutputTail(10);
  tail.push(bytes("abc"));
  tail.push(bytes("defg"));
  assert.deepEqual(state(tail), { text: "abcdefg", truncated: false, total: 7 });
});

Deno.test("OutputTail that receives exactly its cap reports nothing dropped", () => {
  const tail = new OutputTail(6);
  tail.push(bytes("abc"));
  tail.push(bytes("def"));
  assert.deepEqual(state(tail), { text: "abcdef", truncated: false, total: 6 });
  const whole = new OutputTail(3);
  whole.push(bytes("xyz"));
  assert.deepEqual(state(whole), { text: "xyz", truncated: false, total: 3 });
});

Deno.test("OutputTail keeps the last bytes across chunks and counts the dropped ones", () => {
  const tail = new OutputTail(5);
  for (const chunk of ["abc", "defg", "hi"]) tail.push(bytes(chunk));
  assert.deepEqual(state(tail), { text: "efghi", truncated: true, total: 9 });
});

Deno.test("OutputTail keeps the end of one chunk longer than its cap, then keeps sliding", () => {
  const tail = new OutputTail(4);
  tail.push(bytes("ab"));
  tail.push(bytes("cdefgh"));
  assert.deepEqual(state(tail), { text: "efgh", truncated: true, total: 8 });
  tail.push(bytes("ij"));
  assert.deepEqual(state(tail), { text: "ghij", truncated: true, total: 10 });
});

Deno.test("OutputTail with a cap of 0 keeps nothing but still counts what it saw", () => {
  const tail = new OutputTail(0);
  assert.deepEqual(state(tail), { text: "", truncated: false, total: 0 });
  tail.push(bytes("abc"));
  tail.push(bytes("d"));
  assert.deepEqual(state(tail), { text: "", truncated: true, total: 4 });
});

Deno.test("OutputTail turns a character cut at the start of the kept bytes into U+FFFD", () => {
  const tail = new OutputTail(3);
  tail.push(bytes("aé!")); // é is two bytes: the kept three are "é!"
  assert.equal(tail.text(), "é!");
  tail.push(bytes("?")); // now the first byte of é is dropped
  assert.deepEqual(state(tail), { text: "\uFFFD!?", truncated: true, total: 5 });
});

Deno.test("OutputTail refuses a cap that is negative or not a whole number", () => {
  for (const cap of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => new OutputTail(cap), RangeError, `cap ${cap}`);
  }
});

Deno.test("drainInto() reads a stream to its end into the tail", async () => {
  const tail = new OutputTail(8);
  const chunks = ["first ", "second ", "third"].map(bytes);
  await drainInto(ReadableStream.from(chunks), tail);
  assert.deepEqual(state(tail), { text: "nd third", truncated: true, total: 18 });
});

Deno.test("drainInto() rejects when the stream fails, keeping what came before", async () => {
  const tail = new OutputTail(100);
  let pulls = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) controller.enqueue(bytes("partial"));
      else controller.error(new Error("broken pipe"));
    },
  });
  await assert.rejects(drainInto(stream, tail), { message: "broken pipe" });
  assert.deepEqual(state(tail), { text: "partial", truncated: false, total: 7 });
});
