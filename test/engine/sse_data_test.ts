/**
 * The SSE reader against the HTML specification's own examples (§9.2.6, "Interpreting an event
 * stream", and §9.2.4's), with every line ending it allows (CRLF, LF, CR), each stream cut at every
 * byte, and one byte at a time.
 */
import assert from "node:assert/strict";
import { sseEvents, SseEventTooLongError } from "../../lib/engine/sse_data.ts";

async function* pieces(parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield part;
}

async function read(parts: Uint8Array[], max?: number): Promise<string[]> {
  const events: string[] = [];
  for await (const data of sseEvents(pieces(parts), max)) events.push(data);
  return events;
}

/** `text` with its line ends as `ending`, read whole, cut at every byte, and byte by byte. */
async function assertEvents(text: string, expected: string[]) {
  for (const ending of ["\n", "\r\n", "\r"]) {
    const bytes = new TextEncoder().encode(text.replaceAll("\n", ending));
    const label = JSON.stringify(ending);
    assert.deepEqual(await read([bytes]), expected, `whole, ${label}`);
    for (let cut = 1; cut < bytes.length; cut++) {
      assert.deepEqual(
        await read([bytes.slice(0, cut), bytes.slice(cut)]),
        expected,
        `cut at ${cut}, ${label}`,
      );
    }
    const bytewise = Array.from(bytes, (byte) => Uint8Array.of(byte));
    assert.deepEqual(await read(bytewise), expected, `byte by byte, ${label}`);
  }
}

Deno.test("the specification's stock example: data lines join with a line feed", async () => {
  await assertEvents("data: YHOO\ndata: +2\ndata: 10\n\n", ["YHOO\n+2\n10"]);
});

Deno.test("the specification's comment and id example: comments and other fields are read past", async () => {
  await assertEvents(
    ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n\n",
    ["first event", "second event", " third event"],
  );
});

Deno.test("the specification's empty data example: an unended last event is discarded", async () => {
  // Two events: "" and "\n"; the last `data:` has no blank line after it.
  await assertEvents("data\n\ndata\ndata\n\ndata:", ["", "\n"]);
});

Deno.test("the specification's space example: one space after the colon is dropped, not more", async () => {
  await assertEvents("data:test\n\ndata: test\n\n", ["test", "test"]);
});

Deno.test("an event with no data line dispatches nothing; a field without a colon is a name", async () => {
  await assertEvents("event: ping\n\nretry: 10\n\ndata\n\n", [""]);
});

Deno.test("mixed line ends, a split UTF-8 character and a byte order mark read as one stream", async () => {
  const bytes = new TextEncoder().encode(
    '\uFEFFdata: {"a":"é你"}\r\n\r\ndata: x\r\rdata: [DONE]\n\n',
  );
  assert.deepEqual(await read([bytes]), ['{"a":"é你"}', "x", "[DONE]"]);
  const bytewise = Array.from(bytes, (byte) => Uint8Array.of(byte));
  assert.deepEqual(await read(bytewise), ['{"a":"é你"}', "x", "[DONE]"]);
});

Deno.test("a CR last in one read and an LF first in the next are one line end, not two", async () => {
  const encode = (text: string) => new TextEncoder().encode(text);
  // Were they two, the blank line between would dispatch "a" before "b" joined it.
  assert.deepEqual(await read([encode("data: a\r"), encode("\ndata: b\r\n\r\n")]), ["a\nb"]);
});

Deno.test("an event past the bound is refused, however it is cut", async () => {
  const long = new TextEncoder().encode(`data: ${"x".repeat(1000)}`);
  await assert.rejects(
    () => read([long.slice(0, 500), long.slice(500)], 600),
    SseEventTooLongError,
  );
  const lines = new TextEncoder().encode(`${"data: xxxxxxxxxx\n".repeat(100)}\n`);
  await assert.rejects(() => read([lines], 600), SseEventTooLongError);
  assert.equal((await read([lines], 2000))[0].length, 100 * 11 - 1);
});
