/**
 * Debian's HAProxy in front of two gateway hosts on one PostgreSQL store, with the configuration
 * the docs give (`deploy/haproxy.cfg`, only its addresses and timeouts shortened): each session's
 * turns go to one host, whichever header or path carries its token; a session whose host dies
 * goes on, exactly, on the other; and a request whose body never comes is answered 408 by the
 * proxy and its connection closed within `timeout http-request`, the gateways never holding it.
 */
import assert from "node:assert/strict";
import { answered, body, opening } from "../../bench/_claude_code_load.ts";
import { pollUntil } from "../../lib/timing/mod.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { type GatewayProcess, openSession, samples } from "./_gateway_process.ts";
import { bashCall, fleet } from "./_fleet.ts";

const CONFIG = new URL("../../deploy/haproxy.cfg", import.meta.url);

/** Debian's haproxy (in /usr/sbin, which a user's PATH may lack). */
const HAPROXY = await Deno.stat("/usr/sbin/haproxy").then(
  () => "/usr/sbin/haproxy",
  () => "haproxy",
);

/** A port nothing listens on now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** HAProxy with the documented configuration in front of `hosts`; its URL and how to stop it. */
async function startHaproxy(
  hosts: readonly GatewayProcess[],
  timeouts: { httpRequestMs: number },
): Promise<{ url: string; port: number; close(): Promise<void> }> {
  const port = freePort();
  const servers = hosts.map((host, i) => {
    const { hostname, port } = new URL(host.url);
    return `    server gw-${"ab"[i]} ${hostname}:${port} check inter 200ms fall 3 rise 1`;
  });
  // Checked often, so that a dead host is out within a second; a check may take up to 2 s on a
  // loaded machine, and three must fail, so that a live host is never taken for dead.
  servers.unshift("    timeout check 2s");
  let text = (await Deno.readTextFile(CONFIG))
    .replace(/^ {4}bind :8080$/m, `    bind 127.0.0.1:${port}`)
    .replace(/^ {4}timeout http-request .*$/m, `    timeout http-request ${timeouts.httpRequestMs}`)
    .replace(/^ {4}server .*\n/gm, "");
  text = text.trimEnd() + "\n" + servers.join("\n") + "\n";
  const dir = await Deno.makeTempDir({ prefix: "rg-haproxy-" });
  await Deno.writeTextFile(`${dir}/haproxy.cfg`, text);
  const check = await new Deno.Command(HAPROXY, { args: ["-c", "-f", `${dir}/haproxy.cfg`] })
    .output();
  assert.ok(check.success, new TextDecoder().decode(check.stderr));
  const child = new Deno.Command(HAPROXY, {
    args: ["-db", "-f", `${dir}/haproxy.cfg`],
    stdout: "null",
    stderr: "null",
  }).spawn();
  const url = `http://127.0.0.1:${port}`;
  const up = await pollUntil(async () => {
    try {
      const response = await fetch(`${url}/api/hello`);
      await response.body?.cancel();
      return response.status === 200;
    } catch {
      return false;
    }
  }, { timeoutMs: 10_000, intervalMs: 50 });
  assert.ok(up, "HAProxy did not come up");
  return {
    url,
    port,
    async close() {
      child.kill("SIGTERM");
      await child.status;
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** A Claude-Code-sized turn through the proxy with the token where `style` puts it. */
async function turnVia(
  url: string,
  token: string,
  messages: ReturnType<typeof opening>,
  style: "x-api-key" | "bearer" | "path",
): Promise<{ reply: unknown; host: string }> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (style === "x-api-key") headers["x-api-key"] = token;
  if (style === "bearer") headers.authorization = `Bearer ${token}`;
  const base = style === "path" ? `${url}/sessions/${token}` : url;
  const response = await fetch(`${base}/v1/messages`, {
    method: "POST",
    headers,
    body: body(messages),
  });
  assert.equal(response.status, 200, await response.clone().text());
  return { reply: await response.json(), host: response.headers.get("x-gateway-host")! };
}

Deno.test("HAProxy with the documented configuration keeps each session on one host, and moves it when its host dies", async () => {
  let turns = 0;
  const f = await fleet(() => bashCall(`step ${turns++}`));
  const proxy = await startHaproxy(f.hosts, { httpRequestMs: 10_000 });
  try {
    const sessions = await Promise.all(Array.from({ length: 12 }, () => openSession(proxy.url)));
    const served = new Map<string, Set<string>>();
    const conversations = sessions.map((_, s) => opening(s));
    const styles = ["x-api-key", "bearer", "path"] as const;
    for (let k = 0; k < 3; k++) {
      await Promise.all(sessions.map(async ({ id, token }, s) => {
        const { reply, host } = await turnVia(proxy.url, token, conversations[s], styles[k]);
        answered(conversations[s], reply, 10 * s + k);
        served.set(id, (served.get(id) ?? new Set()).add(host));
      }));
    }
    for (const [id, hosts] of served) assert.equal(hosts.size, 1, `${id}: ${[...hosts]}`);
    const byHost = new Map<string, string[]>();
    for (const [id, hosts] of served) {
      const [host] = hosts;
      byHost.set(host, [...(byHost.get(host) ?? []), id]);
    }
    assert.deepEqual([...byHost.keys()].sort(), ["gw-a", "gw-b"], "both hosts take sessions");

    // gw-a dies: its sessions go on on gw-b, each still one exact chain.
    await f.hosts[0].kill("SIGKILL");
    for (const [s, { id, token }] of sessions.entries()) {
      const { reply, host } = await turnVia(proxy.url, token, conversations[s], "x-api-key");
      answered(conversations[s], reply, 10 * s + 3);
      assert.equal(host, "gw-b", id);
    }
    for (const { id } of sessions) {
      const recorded = await samples(f.hosts[1].url, id);
      assertChainExact(callsOfSample(f.calls, recorded[0]), recorded, id);
      assert.equal(recorded[0].turns.length, 4);
    }
  } finally {
    await proxy.close();
    await f.close();
  }
});

Deno.test("behind HAProxy a request body that never comes is answered 408 and its connection closed within timeout http-request", async () => {
  const f = await fleet(() => bashCall("ls"));
  const timeoutMs = 800;
  const proxy = await startHaproxy(f.hosts, { httpRequestMs: timeoutMs });
  try {
    const { token } = await openSession(proxy.url);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: proxy.port });
    await conn.write(
      new TextEncoder().encode(
        `POST /v1/messages HTTP/1.1\r\nhost: gw\r\nx-api-key: ${token}\r\n` +
          `content-type: application/json\r\ncontent-length: 5000\r\n\r\n{"model":`,
      ),
    );
    const sent = performance.now();
    const answer = new TextDecoder().decode(
      new Uint8Array(await new Response(conn.readable).arrayBuffer()),
    );
    const closedAfter = performance.now() - sent;
    assert.match(answer, /^HTTP\/1\.1 408 /);
    assert.ok(closedAfter < timeoutMs + 3_000, `closed after ${closedAfter} ms`);
    // The gateways never saw it: no body timeout, no disconnect, nothing internal counted.
    for (const host of f.hosts) {
      const metrics = await (await fetch(`${host.url}/metrics`, {
        headers: { authorization: "Bearer test-admin-token-0123456789" },
      })).text();
      assert.doesNotMatch(
        metrics,
        /errors_total\{[^}]*code="(body_timeout|internal)"[^}]*\} [1-9]/,
      );
    }
  } finally {
    await proxy.close();
    await f.close();
  }
});
