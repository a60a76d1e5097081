// The in-sandbox half of a local sandbox's gateway forward (see forward.ts), run by the gateway's
// own Deno binary: listens on 127.0.0.1:<port> in the sandbox's network namespace and splices each
// connection onto the Unix socket the gateway listens on, then touches <ready>.
// Usage: deno run forward_inside.js <port> <socket> <ready>
const [port, socket, ready] = Deno.args;
const listener = Deno.listen({ hostname: "127.0.0.1", port: Number(port) });
await Deno.writeTextFile(ready, "");
for await (const conn of listener) {
  Deno.connect({ transport: "unix", path: socket }).then(
    (upstream) => splice(conn, upstream),
    () => conn.close(),
  );
}

// Copies both ways until either side ends, then closes both: a client that leaves is seen leaving.
function splice(a, b) {
  const close = () => {
    for (const conn of [a, b]) {
      try {
        conn.close();
      } catch { /* already closed */ }
    }
  };
  Promise.race([
    a.readable.pipeTo(b.writable, { preventClose: true }),
    b.readable.pipeTo(a.writable, { preventClose: true }),
  ]).catch(() => {}).finally(close);
}
