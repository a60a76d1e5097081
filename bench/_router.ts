/**
 * A router in front of engine workers for the placement bench, as deployments put one behind a
 * single URL: `random` sends each request to a worker drawn at random (seeded; SGLang's model
 * gateway's `random` policy, and what round robin amounts to for one chain whose turns arrive among
 * many others'); `routing_key` places it by its `X-SMG-Routing-Key` on a hash ring (the model
 * gateway's `consistent_hashing`). Requests and answers pass through as they are (streams
 * included).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { seeded } from "./_random.ts";

/** A running router. */
export interface BenchRouter {
  readonly url: string;
  close(): Promise<void>;
}

/** Starts a router over `workers` with `policy`. */
export function startRouter(
  workers: readonly string[],
  policy: "random" | "routing_key",
): BenchRouter {
  const ring = workers.flatMap((url, index) =>
    Array.from({ length: 160 }, (_, v) => [point(`${url}#${v}`), index] as const)
  ).sort((a, b) => a[0] - b[0]);
  const random = seeded(7);
  const pick = (request: Request): string => {
    const key = request.headers.get("x-smg-routing-key");
    if (policy === "random" || key === null) return random.pick(workers);
    const at = point(key);
    const found = ring.find(([p]) => p >= at) ?? ring[0];
    return workers[found[1]];
  };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const url = new URL(request.url);
    const worker = pick(request);
    const body = request.body === null ? null : await request.arrayBuffer();
    return await fetch(`${worker}${url.pathname}${url.search}`, {
      method: request.method,
      headers: { "content-type": request.headers.get("content-type") ?? "application/json" },
      body,
      signal: request.signal,
    });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    close: () => server.shutdown(),
  };
}

function point(text: string): number {
  return createHash("sha256").update(text).digest().readUInt32BE(0);
}
