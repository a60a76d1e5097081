/**
 * The plumbing every protocol's stream and error answer go through knows no protocol: it sends
 * whatever a shape writes at each point, and answers an error in whatever envelope it is given,
 * with the status and retry headers of the error's code.
 */
import assert from "node:assert/strict";
import { EngineUnavailableError } from "../../lib/engine/mod.ts";
import type { ErrorReply } from "../../lib/errors/mod.ts";
import { OutputFeed, SessionNotFoundError, type StreamShape } from "../../lib/session/mod.ts";
import { envelopedResponse } from "../../functions/_http.ts";
import { streamResponse } from "../../functions/_sse.ts";

const bytes = (text: string) => new TextEncoder().encode(text);

/** A made-up protocol: one line per point of the stream. */
const SHAPE: StreamShape<string> = {
  head: [bytes("head\n")],
  keepAlive: bytes("ping\n"),
  content: (events) => events.map((event) => bytes(`${event.type} ${event.index}\n`)),
  body: (reply) => [bytes(`body ${reply}\n`)],
  failure: (answer) => bytes(`failure ${answer.code} ${answer.type} ${answer.message}\n`),
  headers: { "x-made-up": "1" },
};

/** A turn under way that no keep-alive interrupts (its interval is far longer than the test). */
function turn(done: Promise<string>, feed: OutputFeed | null, cancelled = false) {
  return {
    requestId: "req_1",
    done,
    feed,
    cancel: () => {},
    cancelled: () => cancelled,
    pingIntervalMs: 3_600_000,
  };
}

Deno.test("streamResponse() sends a shape's head, its content as fed and its body, with the shape's headers", async () => {
  const feed = new OutputFeed();
  feed.push([{ type: "text", index: 0, text: "hi" }]);
  const response = streamResponse(turn(Promise.resolve("done"), feed), SHAPE);
  assert.deepEqual(Object.fromEntries(response.headers), {
    "cache-control": "no-cache",
    "content-type": "text/event-stream; charset=utf-8",
    "request-id": "req_1",
    "x-made-up": "1",
  });
  assert.equal(await response.text(), "head\ntext 0\nbody done\n");
});

Deno.test("streamResponse() reports a failure after the stream started with the error's answer, unless the turn was cancelled", async () => {
  const failed = Promise.reject(new EngineUnavailableError("engine down"));
  assert.equal(
    await streamResponse(turn(failed, null), SHAPE).text(),
    "head\nfailure engine_unavailable overloaded_error engine down\n",
  );
  const left = Promise.reject(new DOMException("Client disconnected", "AbortError"));
  assert.equal(await streamResponse(turn(left, null, true), SHAPE).text(), "head\n");
});

Deno.test("envelopedResponse() answers with the code's status, and the envelope's body and headers", async () => {
  const seen: ErrorReply[] = [];
  const envelope = (reply: ErrorReply) => {
    seen.push(reply);
    return {
      body: { said: reply.message },
      headers: { "x-id": reply.requestId, ...reply.retryHeaders },
    };
  };
  const missing = new SessionNotFoundError("s1");
  const response = envelopedResponse(missing, "req_1", { retryAfterMs: 1_500 }, envelope);
  assert.equal(response.status, 404);
  assert.equal(response.headers.get("x-id"), "req_1");
  assert.deepEqual(await response.json(), { said: 'Session "s1" not found' });
  const busy = new EngineUnavailableError("engine down");
  const retried = envelopedResponse(busy, "req_2", { retryAfterMs: 1_500 }, envelope);
  assert.equal(retried.status, 529);
  assert.equal(retried.headers.get("retry-after"), "2");
  assert.deepEqual(seen, [
    {
      code: "session_not_found",
      status: 404,
      type: "not_found_error",
      message: 'Session "s1" not found',
      retry: false,
      error: missing,
      requestId: "req_1",
      retryHeaders: {},
    },
    {
      code: "engine_unavailable",
      status: 529,
      type: "overloaded_error",
      message: "engine down",
      retry: true,
      error: busy,
      requestId: "req_2",
      retryHeaders: { "x-should-retry": "true", "retry-after": "2", "retry-after-ms": "1500" },
    },
  ]);
  await retried.body?.cancel();
});
