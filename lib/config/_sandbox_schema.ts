/**
 * The parts of the configuration schema about sandboxes and what runs in them: judgers, E2B and
 * rollouts with their agent CLIs (whose variables `_agent_schema.ts` generates).
 *
 * @module
 */
import { z } from "zod";
import { AgentInstallsSchema } from "./_agent_schema.ts";
import { bool, httpUrl, int, variable } from "./_variable.ts";

/** `JUDGERS`: a JSON object of judgers by name. */
export const JudgersSchema = z.string().transform((raw, ctx) => {
  try {
    return JSON.parse(raw);
  } catch {
    ctx.addIssue({ code: "custom", message: "not JSON" });
    return z.NEVER;
  }
}).pipe(z.record(
  z.string().regex(/^[\w.-]{1,128}$/),
  z.strictObject({
    /** `tests`, or a module path (relative paths start at the gateway's working folder). */
    use: z.string().min(1),
    /** Handed to the judger as it is. */
    options: z.unknown().optional(),
  }),
));

/** How the gateway reaches E2B. */
export const E2bSchema = z.object({
  /** E2B API key; `null` is refused when the sandbox backend is `e2b`. */
  apiKey: variable("E2B_API_KEY", z.string().min(1), {
    secret: true,
    expected: "an E2B API key",
    shown: "unset",
    meaning: "E2B API key; required with `SANDBOX_BACKEND=e2b`",
  }),
  /** Control-plane URL; `null`: from the domain. */
  apiUrl: variable("E2B_API_URL", httpUrl, {
    expected: "an http(s) URL",
    shown: "E2B's",
    meaning: "where the SDK finds E2B's API",
  }),
  /** envd URL; `null`: from the domain. */
  sandboxUrl: variable("E2B_SANDBOX_URL", httpUrl, {
    expected: "an http(s) URL",
    shown: "E2B's",
    meaning: "where the SDK finds a sandbox's envd",
  }),
  /** E2B's domain; `null`: the SDK's own. */
  domain: variable("E2B_DOMAIN", z.string().regex(/^[\w.-]+$/), {
    expected: "a domain name",
    shown: "E2B's",
    meaning: "the domain the SDK derives E2B's API and envd URLs from",
  }),
  /** Template of tasks that name none. */
  template: variable("E2B_TEMPLATE", z.string().min(1), {
    expected: "an E2B template name",
    fallback: "base",
    meaning: "template of tasks that name none",
  }),
  /** Boots tried before giving up. */
  bootAttempts: variable("E2B_BOOT_ATTEMPTS", int(1, 100), {
    fallback: "3",
    meaning: "boots tried before `/evaluate` answers 503",
  }),
  /** First wait between boots, doubled each time, in milliseconds. */
  bootBackoffMs: variable("E2B_BOOT_BACKOFF_MS", int(0, 600_000), {
    fallback: "1000",
    meaning: "first wait between boots, doubled each time (with jitter)",
  }),
});

/** How rollouts run. */
export const RolloutSchema = z.object({
  /** This process runs rollout jobs (else it only serves the API). */
  worker: variable("ROLLOUT_WORKER", bool, {
    expected: "true or false",
    fallback: "true",
    meaning: "this process runs rollout jobs; `false` serves the API only",
  }),
  /** Rollout jobs this process runs at once. */
  concurrency: variable("ROLLOUT_CONCURRENCY", int(1, 1024), {
    fallback: "4",
    meaning: "rollout jobs one process runs at once",
  }),
  /** Sandbox boots at once across every process on the KV. */
  bootConcurrency: variable("ROLLOUT_BOOT_CONCURRENCY", int(1, 1024), {
    fallback: "4",
    meaning: "sandbox boots at once across every process on the KV",
  }),
  /** How often KV is scanned for jobs (and running jobs checked for a cancel), in ms. */
  pollMs: variable("ROLLOUT_POLL_MS", int(10, 60_000), {
    fallback: "1000",
    meaning: "how often a worker scans KV for jobs (and checks running ones for a cancel from " +
      "another process)",
  }),
  /** The URL agents in sandboxes reach the gateway at; `null`: this process's own address. */
  gatewayUrl: variable("ROLLOUT_GATEWAY_URL", httpUrl, {
    expected: "an http(s) URL",
    shown: "this process's address",
    meaning: "the URL agents in sandboxes reach the gateway at (loopback for local sandboxes; " +
      "set it for E2B)",
  }),
  /**
   * Each listed agent's install variables (`CLAUDE_CODE_BIN`, `_PACKAGE`, `_TARBALL`, …), by
   * agent name, generated from the agents' records.
   */
  agents: AgentInstallsSchema,
});
