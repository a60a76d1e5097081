/**
 * What a protocol writes at each point of a streamed turn, as bytes: the contract between the
 * stream plumbing, which knows no protocol (`functions/_sse.ts`: when each point comes, keep-alive
 * timing, a client that leaves), and each protocol, whose shape is built in its folder of `lib/`
 * (`messageStreamShape`, `chunkStreamShape`, `responseStreamShape`).
 *
 * @module
 */
import type { ErrorAnswer } from "../errors/mod.ts";
import type { OutputEvent } from "../output/mod.ts";

/**
 * A protocol's stream of one turn: what is sent at once, while the engine works, as output is
 * sampled, at the end, or when the turn fails after the stream started.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { StreamShape } from "./stream_shape.ts";
 * const bytes = (text: string) => new TextEncoder().encode(text);
 * const shape: StreamShape<string> = {
 *   head: [bytes("start\n")],
 *   keepAlive: bytes(":\n"),
 *   content: (events) => events.map((event) => bytes(`${event.type}\n`)),
 *   body: (reply) => [bytes(`${reply}\n`)],
 *   failure: (answer) => bytes(`error ${answer.code}\n`),
 *   headers: {},
 * };
 * const sent = [
 *   ...shape.head,
 *   ...shape.content([{ type: "text", index: 0, text: "hi" }]),
 *   ...shape.body("end"),
 * ];
 * assert.equal(sent.map((b) => new TextDecoder().decode(b)).join(""), "start\ntext\nend\n");
 * ```
 */
export interface StreamShape<Reply> {
  /** Sent at once, before anything is generated. */
  readonly head: readonly Uint8Array[];
  /** Sent every ping interval while the turn works (so a client's stall watchdog never fires). */
  readonly keepAlive: Uint8Array;
  /** The content of output events, as they are sampled. */
  content(events: readonly OutputEvent[]): readonly Uint8Array[];
  /** The rest of the stream, once the turn is done with `reply`. */
  body(reply: Reply): readonly Uint8Array[];
  /**
   * The event that reports a failure after the stream started: an event has no status or
   * headers, so only the answer's type, code and message reach the client.
   */
  failure(answer: ErrorAnswer): Uint8Array;
  /** Headers of the response beside its `content-type`, `cache-control` and `request-id`. */
  readonly headers: Readonly<Record<string, string>>;
}
