/**
 * A local sandbox's forward: its commands reach one address on the host (the gateway) at
 * 127.0.0.1:<port> inside, and nothing else on the host's loopback.
 */
import assert from "node:assert/strict";
import { forwardTarget, LocalBackend, type Sandbox } from "../../lib/sandbox/mod.ts";
import { makeRepo } from "../_git_repo.ts";

/** An HTTP server on the host's loopback that counts what it is asked. */
function hostServer(body: string) {
  const paths: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    paths.push(new URL(request.url).pathname);
    return new Response(body);
  });
  return { paths, port: server.addr.port, close: () => server.shutdown() };
}

/** A shell command that sends one HTTP request to 127.0.0.1:`port` with bash alone. */
const httpGet = (port: number, path: string) =>
  `(exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET ${path} HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3) 2>&1; echo "exit=$?"`;

async function withForwardedSandbox(
  target: string,
  run: (sandbox: Sandbox, root: string) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "sbx-fwd-" });
  const repo = await makeRepo();
  const backend = new LocalBackend({ root });
  try {
    const sandbox = await backend.create({
      repo: { kind: "path", path: repo.path },
      commit: repo.commits[2],
      network: false,
      forward: { port: 8080, to: forwardTarget(target) },
      lifetimeMs: 60_000,
    });
    await run(sandbox, root);
  } finally {
    await backend.close();
    await Deno.remove(root, { recursive: true });
    await Deno.remove(repo.path, { recursive: true });
  }
}

Deno.test("a forwarded sandbox reaches its target at 127.0.0.1:8080 and nothing else on the host's loopback", async () => {
  const gateway = hostServer("gateway here");
  const engine = hostServer("engine here");
  try {
    await withForwardedSandbox(`http://127.0.0.1:${gateway.port}`, async (sandbox) => {
      const through = await sandbox.exec(httpGet(8080, "/v1/messages"), { timeoutMs: 20_000 });
      assert.match(through.stdout, /\r\n\r\ngateway hereexit=0\n$/);
      const direct = await sandbox.exec(httpGet(engine.port, "/abort_request"), {
        timeoutMs: 20_000,
      });
      assert.match(direct.stdout, /Connection refused/);
      assert.match(direct.stdout, /exit=1\n$/);
      // The gateway's own port is not reachable directly either: only through the forward.
      const gatewayDirect = await sandbox.exec(httpGet(gateway.port, "/"), { timeoutMs: 20_000 });
      assert.match(gatewayDirect.stdout, /Connection refused/);
    });
    assert.deepEqual(gateway.paths, ["/v1/messages"]);
    assert.deepEqual(engine.paths, []);
  } finally {
    await gateway.close();
    await engine.close();
  }
});

Deno.test("a forward carries many connections at once, each answered in full", async () => {
  const body = "z".repeat(200_000);
  const gateway = hostServer(body);
  try {
    await withForwardedSandbox(`http://127.0.0.1:${gateway.port}`, async (sandbox) => {
      const result = await sandbox.exec(
        // (`wait` for these jobs only: the forwarder runs in the background of the same shell.)
        `pids=; for i in $(seq 8); do ( ${
          httpGet(8080, "/n")
        } ) | tr -cd z | wc -c & pids="$pids $!"; done; wait $pids`,
        { timeoutMs: 30_000 },
      );
      assert.equal(result.stdout, "200000\n".repeat(8), result.stderr);
    });
    assert.equal(gateway.paths.length, 8);
  } finally {
    await gateway.close();
  }
});

Deno.test("killing a forwarded sandbox stops its forward and removes its socket", async () => {
  const gateway = hostServer("gateway here");
  try {
    await withForwardedSandbox(`http://127.0.0.1:${gateway.port}`, async (sandbox, root) => {
      const socket = `${root}/${sandbox.id}/gateway.sock`;
      assert.ok((await Deno.lstat(socket)).isSocket);
      await sandbox.kill();
      await assert.rejects(Deno.lstat(socket), Deno.errors.NotFound);
    });
  } finally {
    await gateway.close();
  }
});

Deno.test("a sandbox with both a network and a forward is refused", async () => {
  const backend = new LocalBackend({ root: await Deno.makeTempDir({ prefix: "sbx-fwd-" }) });
  try {
    await assert.rejects(
      backend.create({
        repo: { kind: "path", path: "/nonexistent" },
        commit: "HEAD",
        network: true,
        forward: { port: 8080, to: forwardTarget("http://127.0.0.1:1") },
        lifetimeMs: 1000,
      }),
      /A sandbox with a forward has no network of its own/,
    );
  } finally {
    await backend.close();
  }
});
