/**
 * The `data` of each event of a Server-Sent Events body, as the HTML specification's event stream
 * interpretation reads it (§9.2.6): lines end with CRLF, LF or CR (a CRLF cut between two reads is
 * one line end); a blank line dispatches the event; `data` lines join with LF; a line starting with
 * `:` is a comment; one space after the colon is dropped; an event with no `data` line dispatches
 * nothing; an event the body ends before its blank line is discarded. Other fields (`event`, `id`,
 * `retry`) are read past: the engines send none the gateway needs.
 *
 * @module
 */

/** An event longer than the reader will hold: a runaway body. */
export class SseEventTooLongError extends Error {
  constructor(readonly maxEventChars: number) {
    super(`Engine sent an event longer than ${maxEventChars} characters`);
    this.name = "SseEventTooLongError";
  }
}

const LF = "\n";
const CR = "\r";

/**
 * Each event's data, in order, as `body`'s bytes arrive (UTF-8, a leading BOM dropped). Work is
 * proportional to the bytes: a line cut across many reads is searched once, not again each read.
 *
 * @throws {SseEventTooLongError} once one event passes `maxEventChars`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { sseEvents } from "./sse_data.ts";
 * async function* body() {
 *   yield new TextEncoder().encode("data: YHOO\r\ndata: +2\rdata: 10\n\n: ping\n\ndata: [DONE]\n\n");
 * }
 * const events: string[] = [];
 * for await (const data of sseEvents(body())) events.push(data);
 * assert.deepEqual(events, ["YHOO\n+2\n10", "[DONE]"]);
 * ```
 */
export async function* sseEvents(
  body: AsyncIterable<Uint8Array>,
  maxEventChars = 256 * 1024 * 1024,
): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  /** Text not read yet; it starts at the start of a line. */
  let buffer = "";
  /** Characters at the start of `buffer` known to hold no line end. */
  let scanned = 0;
  /** The event's data lines so far; `null` while it has none. */
  let data: string[] | null = null;
  let dataChars = 0;

  /** Reads the whole lines of `buffer`; at the body's end (`final`), a last CR ends its line. */
  const lines = function* (final: boolean): Generator<string> {
    let from = 0;
    // The next LF and CR at or after `from`: -1 for none left in this buffer.
    let lf = -2;
    let cr = -2;
    for (;;) {
      const at = Math.max(from, scanned);
      if (lf !== -1 && lf < at) lf = buffer.indexOf(LF, at);
      if (cr !== -1 && cr < at) cr = buffer.indexOf(CR, at);
      const end = lf === -1 ? cr : cr === -1 ? lf : Math.min(lf, cr);
      if (end === -1) {
        scanned = buffer.length - from;
        break;
      }
      // A CR last in the buffer may be the first half of a CRLF: wait for the next read.
      if (end === cr && end === buffer.length - 1 && !final) {
        scanned = end - from;
        break;
      }
      const line = buffer.slice(from, end);
      from = end + (end === cr && buffer[end + 1] === LF ? 2 : 1);
      scanned = 0;
      if (line.length === 0) {
        if (data !== null) yield data.join(LF);
        data = null;
        dataChars = 0;
        continue;
      }
      if (line.charCodeAt(0) === 58) continue; // ":" a comment
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      if (field !== "data") continue;
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.charCodeAt(0) === 32) value = value.slice(1);
      (data ??= []).push(value);
      dataChars += value.length + 1;
      if (dataChars > maxEventChars) throw new SseEventTooLongError(maxEventChars);
    }
    buffer = from === 0 ? buffer : buffer.slice(from);
  };

  for await (const bytes of body) {
    buffer += decoder.decode(bytes, { stream: true });
    yield* lines(false);
    if (dataChars + buffer.length > maxEventChars) throw new SseEventTooLongError(maxEventChars);
  }
  buffer += decoder.decode();
  yield* lines(true);
  // What is left is an event the body ended before its blank line: discarded, as the
  // specification says (and a line without its end with it).
}
