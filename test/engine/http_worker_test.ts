/**
 * The engine HTTP worker makes a client's requests on its own thread and answers as undici does
 * on the caller's: status, body pieces in order, errors by name and code, aborts either side of
 * the answer's head, a prompt's digits sent from shared memory.
 */
import assert from "node:assert/strict";
import {
  EngineHttpWorker,
  type EngineTransport,
  isTransportTimeout,
  localTransport,
  PromptIds,
} from "../../lib/engine/mod.ts";

const encoder = new TextEncoder();

/** A server whose `/stream` answer the test writes piece by piece, and which echoes other bodies. */
function startServer() {
  const pieces = Promise.withResolvers<ReadableStreamDefaultController<Uint8Array>>();
  const hanging = Promise.withResolvers<Response>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/stream") {
      return new Response(new ReadableStream({ start: (c) => pieces.resolve(c) }), {
        headers: { "content-type": "text/event-stream" },
      });
    }
    if (path === "/hang") return await hanging.promise;
    return new Response(await request.arrayBuffer(), { status: path === "/fail" ? 503 : 200 });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    pieces: pieces.promise,
    async close() {
      hanging.resolve(new Response("late"));
      pieces.promise.then((controller) => controller.close()).catch(() => {});
      await server.shutdown();
    },
  };
}

const shared = new EngineHttpWorker();
const TRANSPORTS: [string, (timeoutMs?: number) => EngineTransport][] = [
  ["the caller's thread", (timeoutMs = 10_000) => localTransport({ connections: 2, timeoutMs })],
  [
    "the engine HTTP worker",
    (timeoutMs = 10_000) => shared.connect({ connections: 2, timeoutMs }),
  ],
];

for (const [where, connect] of TRANSPORTS) {
  Deno.test(`requests on ${where}: the body sent whole from its parts, the status and body answered`, async () => {
    const server = startServer();
    const { url } = server;
    const transport = connect();
    try {
      // A prompt's digits, in the shared memory PromptIds keeps them in.
      const ids = PromptIds.from(Array.from({ length: 20_000 }, (_, i) => i * 7));
      const parts = [encoder.encode('{"input_ids":['), ids.ascii(), encoder.encode("]}")];
      const answer = await transport.request(`${url}/echo`, { headers: {}, body: parts });
      assert.equal(answer.statusCode, 200);
      assert.deepEqual(JSON.parse(await answer.body.text()).input_ids, ids.toArray());
      const failed = await transport.request(`${url}/fail`, { headers: {}, body: "busy" });
      assert.equal(failed.statusCode, 503);
      assert.equal(await failed.body.text(), "busy");
    } finally {
      await transport.close();
      await server.close();
    }
  });

  Deno.test(`requests on ${where}: a streamed body's pieces come in order, as written`, async () => {
    const server = startServer();
    const { url, pieces } = server;
    const transport = connect();
    try {
      const answer = await transport.request(`${url}/stream`, { headers: {}, body: "{}" });
      const controller = await pieces;
      const read: string[] = [];
      const reading = (async () => {
        for await (const piece of answer.body) read.push(new TextDecoder().decode(piece));
      })();
      for (const text of ["data: 1\n\n", "data: ü\n\n", "data: [DONE]\n\n"]) {
        controller.enqueue(encoder.encode(text));
      }
      controller.close();
      await reading;
      assert.equal(read.join(""), "data: 1\n\ndata: ü\n\ndata: [DONE]\n\n");
    } finally {
      await transport.close();
      await server.close();
    }
  });

  Deno.test(`requests on ${where}: a body read whole keeps a character split between pieces`, async () => {
    const server = startServer();
    const { url, pieces } = server;
    const transport = connect();
    try {
      const answer = await transport.request(`${url}/stream`, { headers: {}, body: "{}" });
      const controller = await pieces;
      const text = answer.body.text();
      const bytes = encoder.encode("data: 你好 🎉\n\n");
      // Cut inside "你" and inside "🎉".
      for (const [from, to] of [[0, 7], [7, 15], [15, bytes.length]]) {
        controller.enqueue(bytes.slice(from, to));
      }
      controller.close();
      assert.equal(await text, "data: 你好 🎉\n\n");
    } finally {
      await transport.close();
      await server.close();
    }
  });

  Deno.test(`requests on ${where}: an abort before the answer rejects with its reason`, async () => {
    const server = startServer();
    const { url } = server;
    const transport = connect();
    try {
      const abort = new AbortController();
      const pending = transport.request(`${url}/hang`, {
        headers: {},
        body: "{}",
        signal: abort.signal,
      });
      abort.abort(new Error("the client left"));
      await assert.rejects(pending, /the client left|abort/i);
    } finally {
      await transport.close();
      await server.close();
    }
  });

  Deno.test(`requests on ${where}: an abort mid-body ends the body's reading`, async () => {
    const server = startServer();
    const { url, pieces } = server;
    const transport = connect();
    try {
      const abort = new AbortController();
      const answer = await transport.request(`${url}/stream`, {
        headers: {},
        body: "{}",
        signal: abort.signal,
      });
      (await pieces).enqueue(encoder.encode("data: 1\n\n"));
      const reading = (async () => {
        for await (const _ of answer.body) abort.abort(new Error("the client left"));
      })();
      await assert.rejects(reading, /the client left|abort/i);
    } finally {
      await transport.close();
      await server.close();
    }
  });

  Deno.test(`requests on ${where}: the pool's timeout bounds the answer and the reading of its body`, async () => {
    const server = startServer();
    const { url, pieces } = server;
    const transport = connect(200);
    try {
      await assert.rejects(
        transport.request(`${url}/hang`, { headers: {}, body: "{}" }),
        (error) => isTransportTimeout(error),
      );
      const answer = await transport.request(`${url}/stream`, { headers: {}, body: "{}" });
      (await pieces).enqueue(encoder.encode("data: 1\n\n"));
      await assert.rejects(
        (async () => {
          for await (const _ of answer.body);
        })(),
        (error) => isTransportTimeout(error),
      );
    } finally {
      await transport.close();
      await server.close();
    }
  });

  Deno.test(`requests on ${where}: a refused connection fails with undici's error name and code`, async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const url = `http://127.0.0.1:${listener.addr.port}`;
    listener.close();
    const transport = connect();
    try {
      await assert.rejects(
        transport.request(url, { headers: {}, body: "{}" }),
        (error: Error & { code?: string }) => {
          assert.equal(error.code, "ECONNREFUSED");
          assert.match(String(error), /ECONNREFUSED|connect/i);
          return true;
        },
      );
    } finally {
      await transport.close();
    }
  });
}

Deno.test("a closed engine HTTP worker fails the requests under way, and the next request starts it again", async () => {
  const server = startServer();
  const { url } = server;
  const worker = new EngineHttpWorker();
  const transport = worker.connect({ connections: 2, timeoutMs: 10_000 });
  try {
    const pending = transport.request(`${url}/hang`, { headers: {}, body: "{}" });
    await worker.close();
    await assert.rejects(pending, /engine HTTP worker was closed/);
    const answer = await transport.request(`${url}/echo`, { headers: {}, body: "again" });
    assert.equal(await answer.body.text(), "again");
  } finally {
    await transport.close();
    await worker.close();
    await server.close();
  }
});
