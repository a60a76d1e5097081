/**
 * What the gateway tells its operator at start-up: where it listens, what it serves and from
 * where, what its memory budget gives, and — loudly — when the engine is the scripted one.
 *
 * @module
 */
import v8 from "node:v8";
import { heapFlags, TRIM_EVERY_MS } from "../lib/cache/mod.ts";
import { describeRunners, type RunnersHere } from "../lib/evaluate/mod.ts";
import type { Deps } from "./_deps.ts";

/** What the gateway tells its operator at start-up, loudly so when the engine is scripted. */
export function banner(
  deps: Deps,
  listening: string,
  title = `Rollout Gateway listening on ${listening}`,
  runners: RunnersHere | null = null,
): string {
  const lines = [
    title,
    `  store:      ${deps.storeDescription}`,
    `  tokenizer:  ${deps.tokenizer.path}${
      deps.config.chatTemplatePath ? ` (template ${deps.config.chatTemplatePath})` : ""
    }; ${
      deps.config.tokenizerWorkers === 0
        ? "new text encoded on the event loop"
        : `new text encoded by ${deps.config.tokenizerWorkers} tokenizer workers`
    }`,
    `  formats:    tool calls ${deps.formats.toolCallParser}, reasoning ${
      deps.formats.reasoningParser ?? "none"
    }`,
    `  context:    ${deps.contextLength} tokens`,
    `  images:     ${imagesLine(deps)}`,
    `  memory:     ${memoryLine(deps)}`,
    `  engine:     ${
      deps.config.enginePlacement === "gateway"
        ? `${deps.config.engineWorkers?.length} workers, placed by the gateway`
        : deps.engine.url
    } (${deps.config.engineApi}${deps.config.engineSessions ? ", engine sessions" : ""})`,
    `  sandboxes:  ${deps.sandbox.name}${
      deps.sandbox.location === undefined ? "" : ` (${deps.sandbox.location})`
    }, judgers: ${[...deps.judgers.keys()].join(", ")}`,
    `  rollouts:   ${
      deps.config.rollout.worker
        ? `worker on, ${deps.config.rollout.concurrency} at once`
        : "worker off (API only)"
    }`,
    `  agents:     ${
      [...deps.rollout.deps.agents].map(([name, install]) =>
        `${name} ${install.local === null ? "(not installed here)" : "ready"}`
      ).join(", ")
    }`,
    `  runners:    ${
      deps.sandbox.capabilities.placement === "remote"
        ? "the sandbox image's (not checked from here)"
        : runners === null
        ? "not checked"
        : describeRunners(runners)
    }`,
  ];
  if (!deps.config.adminToken) {
    lines.push(`  admin token (generated, kept in KV): ${deps.adminToken}`);
  }
  if (deps.config.devOpenSessions) {
    lines.push("  DEV_OPEN_SESSIONS is on: any unknown token opens a session");
  }
  if (deps.scripted) lines.unshift(...SCRIPTED_WARNING);
  return lines.join("\n");
}

/**
 * The budget, what the caches may hold of it, the heap limit V8 runs with (and the flag that
 * holds it to the budget when it does not), and whether freed memory goes back to the system.
 */
function memoryLine(deps: Deps): string {
  const { memory } = deps;
  const mib = (bytes: number) => Math.round(bytes / (1024 * 1024));
  const caches = Object.values(memory.caches).reduce((sum, bytes) => sum + bytes, 0) +
    memory.caches.sections * deps.config.tokenizerWorkers;
  const limit = mib(v8.getHeapStatistics().heap_size_limit);
  // V8's limit is a little above the old space asked (the young generation is added).
  const held = limit <= memory.heapMiB * 1.25;
  return `budget ${deps.config.memoryBudgetMb} MiB (caches up to ${mib(caches)} MiB); V8 heap ` +
    `limit ${limit} MiB${
      held ? "" : ` (DENO_V8_FLAGS=${heapFlags(memory)} holds it to the budget)`
    }; freed memory ${
      deps.trimFreedMemory
        ? `given back every ${TRIM_EVERY_MS / 1000} s`
        : "kept by the allocator (no glibc here)"
    }`;
}

/**
 * Where the socket listens, said as it is, and the URL this machine reaches it at (loopback for
 * every interface: agents in local sandboxes share this machine's network).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listeningOn } from "./_banner.ts";
 * assert.deepEqual(listeningOn("0.0.0.0", 8080), {
 *   url: "http://127.0.0.1:8080",
 *   words: "http://127.0.0.1:8080 (every interface: HOST=0.0.0.0)",
 * });
 * assert.deepEqual(listeningOn("127.0.0.1", 8080), {
 *   url: "http://127.0.0.1:8080",
 *   words: "http://127.0.0.1:8080 (this machine only: HOST=0.0.0.0 listens on every interface)",
 * });
 * ```
 */
export function listeningOn(hostname: string, port: number): { url: string; words: string } {
  const every = hostname === "0.0.0.0" || hostname === "::";
  const local = every ? "127.0.0.1" : hostname;
  const url = `http://${local.includes(":") ? `[${local}]` : local}:${port}`;
  if (every) return { url, words: `${url} (every interface: HOST=${hostname})` };
  const loopback = /^127\.|^::1$|^localhost$/.test(hostname);
  return {
    url,
    words: loopback ? `${url} (this machine only: HOST=0.0.0.0 listens on every interface)` : url,
  };
}

/**
 * What the banner says of images: the policy in force, and when images become placeholders while
 * the tokenizer folder holds an image processor (a vision-language model served blind), how to
 * give them to the model.
 */
function imagesLine(deps: Deps): string {
  const policy = deps.config.imagePolicy;
  const said = {
    placeholder: "placeholder (each image becomes a short text naming it)",
    reject: "reject (a request with an image is a 400)",
    vision: "vision (images go to the model)",
  }[policy];
  return policy !== "vision" && deps.imageProcessor !== null
    ? `${said}; the tokenizer folder has an image processor (preprocessor_config.json): ` +
      "IMAGE_POLICY=vision gives images to the model"
    : said;
}

const BAR = "!".repeat(78);

/** What the banner says when no `ENGINE_URL` is set. */
export const SCRIPTED_WARNING: readonly string[] = [
  BAR,
  "!! ENGINE_URL is not set: answering with the BUILT-IN SCRIPTED ENGINE.",
  "!! Its replies are canned text, not a model. Set ENGINE_URL to serve a real engine.",
  BAR,
];
