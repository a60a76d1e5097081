/**
 * A local sandbox's one way out: its commands have a network namespace of their own (so nothing
 * on the host's loopback — the engine's `/abort_request`, pause and weight-update endpoints among
 * it — can be reached), except `127.0.0.1:<port>` inside, which leads to one address on the
 * gateway's side (the gateway). Inside, the gateway's own Deno binary runs a small forwarder from
 * that port to a Unix socket bound into the sandbox; outside, the gateway listens on the socket
 * and splices each connection onto the target. Unix sockets cross network namespaces; TCP does not.
 *
 * @module
 */
/** Where a forward leads: a TCP address on the gateway's side, over TLS for `https` URLs. */
export interface ForwardTarget {
  readonly hostname: string;
  readonly port: number;
  readonly tls: boolean;
}

/** A local sandbox's forward: the port inside and where it leads. */
export interface Forward {
  /** Port on the sandbox's own loopback. */
  readonly port: number;
  readonly to: ForwardTarget;
}

/** Where the forward's parts appear inside the sandbox. */
export const FORWARD_INSIDE = {
  deno: "/sandbox/tools/deno",
  script: "/sandbox/tools/gateway_forward.js",
  socket: "/sandbox/tools/gateway.sock",
} as const;

/** The in-sandbox forwarder script on this machine. */
export const FORWARD_SCRIPT = new URL("./_forward_inside.js", import.meta.url).pathname;

/** Longest a command waits for its forwarder to listen, in 10 ms steps. */
const READY_STEPS = 1000;

/**
 * The target of a URL: its host and port (80 or 443 by default), TLS for `https`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { forwardTarget } from "./forward.ts";
 * assert.deepEqual(forwardTarget("http://127.0.0.1:8080"), {
 *   hostname: "127.0.0.1",
 *   port: 8080,
 *   tls: false,
 * });
 * ```
 */
export function forwardTarget(url: string): ForwardTarget {
  const parsed = new URL(url);
  const tls = parsed.protocol === "https:";
  return {
    hostname: parsed.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: parsed.port ? Number(parsed.port) : tls ? 443 : 80,
    tls,
  };
}

/**
 * `command` preceded by the start of the forwarder in the background, and a wait until it
 * listens; the forwarder dies with the command's PID namespace.
 */
export function forwardedCommand(command: string, port: number): string {
  const ready = "/tmp/.gateway-forward-ready";
  const deno = [
    `DENO_DIR=/tmp/.gateway-forward-deno DENO_NO_UPDATE_CHECK=1 ${FORWARD_INSIDE.deno} run`,
    "--quiet --no-config --no-lock --no-prompt",
    `--allow-net=127.0.0.1:${port},unix:${FORWARD_INSIDE.socket}`,
    `--allow-read=${FORWARD_INSIDE.socket} --allow-write=${FORWARD_INSIDE.socket},${ready}`,
    `${FORWARD_INSIDE.script} ${port} ${FORWARD_INSIDE.socket} ${ready}`,
  ].join(" ");
  return [
    `rm -f ${ready}`,
    `${deno} </dev/null >/dev/null 2>&1 &`,
    `for _ in $(seq ${READY_STEPS}); do [ -e ${ready} ] && break; sleep 0.01; done`,
    `[ -e ${ready} ] || { echo "The gateway forward did not start" >&2; exit 97; }`,
    command,
  ].join("\n");
}

/** The gateway's half of a forward, listening on a Unix socket. */
export interface ForwardListener {
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

/**
 * Listens on the Unix socket `path` and splices each connection onto `to`.
 *
 * @example
 * ```ts
 * import { forwardTarget, listenForward } from "./forward.ts";
 * const dir = await Deno.makeTempDir();
 * const listener = listenForward(`${dir}/gateway.sock`, forwardTarget("http://127.0.0.1:8080"));
 * await listener.close();
 * await Deno.remove(dir, { recursive: true });
 * ```
 */
export function listenForward(path: string, to: ForwardTarget): ForwardListener {
  const listener = Deno.listen({ transport: "unix", path });
  const open = new Set<Deno.Conn>();
  const accepting = (async () => {
    for await (const conn of listener) {
      open.add(conn);
      const dial = to.tls
        ? Deno.connectTls({ hostname: to.hostname, port: to.port })
        : Deno.connect({ hostname: to.hostname, port: to.port });
      dial.then((upstream) => {
        open.add(upstream);
        splice(conn, upstream, () => {
          open.delete(conn);
          open.delete(upstream);
        });
      }, () => {
        open.delete(conn);
        closeQuietly(conn);
      });
    }
  })().catch(() => {/* the listener was closed */});
  return {
    async close() {
      closeQuietly(listener);
      for (const conn of open) closeQuietly(conn);
      open.clear();
      await accepting;
      await Deno.remove(path).catch(() => {});
    },
  };
}

/** Copies both ways until either side ends, then closes both (a client that leaves is seen). */
function splice(a: Deno.Conn, b: Deno.Conn, closed: () => void): void {
  Promise.race([
    a.readable.pipeTo(b.writable, { preventClose: true }),
    b.readable.pipeTo(a.writable, { preventClose: true }),
  ]).catch(() => {}).finally(() => {
    closeQuietly(a);
    closeQuietly(b);
    closed();
  });
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch { /* already closed */ }
}
