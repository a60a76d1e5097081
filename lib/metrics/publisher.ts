/**
 * A worker's snapshot published at once and then every few seconds, one write at a time, until
 * stopped; a failed write is logged and the next interval tries again.
 *
 * @module
 */
import { logBackgroundFailure } from "../errors/mod.ts";
import { METRICS_PUBLISH_MS } from "./snapshot.ts";

/** Publishing under way. */
export interface Publishing {
  /** Stops the timer and waits for a write in flight; nothing is written after. */
  stop(): Promise<void>;
}

/**
 * Calls `publish` now and every `intervalMs`; an interval that comes while a call is still
 * running is skipped, so a slow KV never piles writes up.
 *
 * @example
 * ```ts
 * import { writeMetricsSnapshot } from "../kv/mod.ts";
 * import { startPublishing } from "./publisher.ts";
 * import { createMetrics } from "./registry.ts";
 * import { METRICS_FRESH_MS, takeSnapshot } from "./snapshot.ts";
 * const kv = await Deno.openKv(":memory:");
 * const metrics = createMetrics();
 * const publishing = startPublishing(() =>
 *   writeMetricsSnapshot(kv, "gw-a", 1, takeSnapshot(metrics.registry), METRICS_FRESH_MS)
 * );
 * await publishing.stop();
 * kv.close();
 * ```
 */
export function startPublishing(
  publish: () => Promise<void>,
  intervalMs = METRICS_PUBLISH_MS,
): Publishing {
  let stopped = false;
  let writing: Promise<void> | null = null;
  const tick = () => {
    if (stopped || writing) return;
    writing = (async () => {
      try {
        await publish();
      } catch (error) {
        logBackgroundFailure("Publishing this worker's metrics", error);
      } finally {
        writing = null;
      }
    })();
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await writing;
    },
  };
}
