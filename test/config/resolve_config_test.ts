import assert from "node:assert/strict";
import { CONFIG_DECLARATIONS } from "../../lib/config/config_schema.ts";
import { defaultMemoryBudgetMb } from "../../lib/cache/mod.ts";
import {
  CONFIG_VARIABLES,
  defaultTokenizerPath,
  resolveConfig,
} from "../../lib/config/resolve_config.ts";
import { ConfigError } from "../../lib/errors/mod.ts";

/**
 * Asserts that `env` is refused with a ConfigError naming `variable` and quoting `value` (a
 * secret's value never: its length only).
 */
function assertRefused(variable: string, value: string) {
  assert.throws(
    () => resolveConfig({ [variable]: value }),
    (error: unknown) => {
      assert.ok(error instanceof ConfigError, `${variable}=${value}: ${error}`);
      assert.equal(error.name, "ConfigError");
      assert.equal(error.variable, variable);
      assert.ok(error.message.includes(variable), error.message);
      const secret = CONFIG_DECLARATIONS.find((v) => v.name === variable)?.secret;
      const shown = secret ? `*** (${[...value.trim()].length} characters)` : `"${value}"`;
      assert.ok(error.message.includes(shown), error.message);
      if (secret) assert.ok(!error.message.includes(value.trim()), error.message);
      return true;
    },
  );
}

Deno.test("resolveConfig() fills every setting with its default on an empty environment", () => {
  assert.deepEqual({ ...resolveConfig({}) }, {
    port: 8080,
    host: "127.0.0.1",
    sglangUrl: null,
    engineUrl: null,
    engineApi: "sglang",
    vllmEndpoint: "auto",
    enginePlacement: "router",
    engineHealthIntervalMs: 2000,
    engineSessions: false,
    engineSessionIdleS: 1800,
    cacheSalt: "none",
    engineWorkers: null,
    workers: navigator.hardwareConcurrency,
    kvPath: "./data/gateway.kv",
    adminToken: null,
    tokenizerPath: defaultTokenizerPath(),
    chatTemplatePath: null,
    toolCallParser: null,
    reasoningParser: null,
    contextLength: null,
    devOpenSessions: false,
    storeUrl: null,
    hostId: Deno.hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 64),
    storePoolSize: 16,
    storeTimeoutMs: 15_000,
    maxBodyBytes: 32 * 1024 * 1024,
    bodyTimeoutMs: 60_000,
    engineConnections: 64,
    engineTimeoutMs: 30 * 60_000,
    pingIntervalMs: 10_000,
    roundtripPolicy: "keep",
    specialTokensInText: "plain",
    thinkingHistory: "keep",
    realignMaxTokens: 256,
    signingSecret: null,
    chainCacheTokens: null,
    memoryBudgetMb: defaultMemoryBudgetMb(
      Deno.systemMemoryInfo().total,
      navigator.hardwareConcurrency,
    ),
    tokenizerWorkers: 2,
    scriptedLatencyMs: 0,
    modelId: "rollout-gateway",
    imagePolicy: "placeholder",
    maxImageBytes: 5 * 1024 * 1024,
    maxImagePixels: 64_000_000,
    maxImagesPerRequest: 100,
    keepAttribution: false,
    retryAfterMs: 2000,
    leaseTtlMs: 15_000,
    lockWaitMs: 30_000,
    sessionRetentionMs: 7 * 86_400_000,
    rewardAllocation: "uniform",
    trainSideSegments: false,
    maxSegments: 64,
    maxSegmentTokens: 0,
    overlongSegments: "mask",
    sandboxBackend: "local",
    routedExperts: false,
    sandboxRoot: "/tmp/rollout-gateway",
    sandboxOutputBytes: 1024 * 1024,
    evalTimeoutMs: 30 * 60_000,
    evalVerdictTtlMs: 600_000,
    evalConcurrency: 4,
    judgers: {},
    defaultJudger: "tests",
    e2b: {
      apiKey: null,
      apiUrl: null,
      sandboxUrl: null,
      domain: null,
      template: "base",
      bootAttempts: 3,
      bootBackoffMs: 1000,
    },
    rollout: {
      worker: true,
      concurrency: 4,
      bootConcurrency: 4,
      pollMs: 1000,
      gatewayUrl: null,
      agents: new Map([
        ["claude_code", { bin: null, package: null, tarball: null, extra: {} }],
        ["qwen_code", { bin: null, package: null, tarball: null, extra: { NODE_BIN: null } }],
        ["codex", { bin: null, package: null, tarball: null, extra: {} }],
      ]),
    },
  });
});

Deno.test("resolveConfig() reads every variable it documents", () => {
  const config = resolveConfig({
    PORT: "9000",
    HOST: "127.0.0.1",
    SGLANG_URL: "http://10.0.0.5:30000",
    KV_PATH: ":memory:",
    ADMIN_TOKEN: "admin-token-0123456789",
    TOKENIZER_PATH: "/models/qwen3",
    CHAT_TEMPLATE: "/models/qwen3/coder.jinja",
    TOOL_CALL_PARSER: "qwen25",
    REASONING_PARSER: "none",
    CONTEXT_LENGTH: "40960",
    DEV_OPEN_SESSIONS: "true",
    STORE_URL: "postgres://gw:pw@db.internal:5432/rg",
    HOST_ID: "gw-a.rack-2",
    STORE_POOL_SIZE: "4",
    STORE_TIMEOUT_MS: "2500",
    MAX_BODY_BYTES: "2048",
    BODY_TIMEOUT_MS: "5000",
    ENGINE_API: "vllm",
    VLLM_ENDPOINT: "completions",
    CACHE_SALT: "weight_version",
    ENGINE_PLACEMENT: "gateway",
    ENGINE_HEALTH_INTERVAL_MS: "500",
    ENGINE_SESSIONS: "true",
    ENGINE_SESSION_IDLE_S: "60",
    ENGINE_CONNECTIONS: "8",
    ENGINE_TIMEOUT_MS: "60000",
    PING_INTERVAL_MS: "50",
    ROUNDTRIP_POLICY: "keep",
    SPECIAL_TOKENS_IN_TEXT: "live",
    THINKING_HISTORY: "template",
    REALIGN_MAX_TOKENS: "0",
    SIGNING_SECRET: "signing-secret-0123456789",
    CHAIN_CACHE_TOKENS: "0",
    MEMORY_BUDGET_MB: "768",
    TOKENIZER_WORKERS: "1",
    SCRIPTED_LATENCY_MS: "5",
    MODEL_ID: "qwen3-8b",
    IMAGE_POLICY: "vision",
    MAX_IMAGE_BYTES: "2048",
    MAX_IMAGE_PIXELS: "4096",
    MAX_IMAGES_PER_REQUEST: "3",
    KEEP_ATTRIBUTION: "yes",
    RETRY_AFTER_MS: "250",
    LEASE_TTL_MS: "1000",
    LOCK_WAIT_MS: "0",
    SESSION_RETENTION_MS: "60000",
    REWARD_ALLOCATION: "final_only",
    TRAIN_SIDE_SEGMENTS: "1",
    MAX_SEGMENTS: "8",
    MAX_SEGMENT_TOKENS: "32768",
    OVERLONG_SEGMENTS: "drop",
    ROUTED_EXPERTS: "true",
    SANDBOX_BACKEND: "e2b",
    SANDBOX_ROOT: "/var/lib/rollout/",
    SANDBOX_OUTPUT_BYTES: "4096",
    EVAL_TIMEOUT_MS: "120000",
    EVAL_VERDICT_TTL_MS: "60000",
    EVAL_CONCURRENCY: "16",
    JUDGERS: '{"strict": {"use": "./judgers/strict.ts", "options": {"level": 2}}}',
    DEFAULT_JUDGER: "strict",
    E2B_API_KEY: "e2b_0123456789",
    E2B_API_URL: "http://127.0.0.1:3000/",
    E2B_SANDBOX_URL: "http://127.0.0.1:49983",
    E2B_DOMAIN: "e2b.example",
    E2B_TEMPLATE: "swe-python",
    E2B_BOOT_ATTEMPTS: "5",
    E2B_BOOT_BACKOFF_MS: "250",
    ROLLOUT_WORKER: "false",
    ROLLOUT_CONCURRENCY: "8",
    ROLLOUT_BOOT_CONCURRENCY: "2",
    ROLLOUT_POLL_MS: "250",
    ROLLOUT_GATEWAY_URL: "http://gateway.internal:8080/",
    CLAUDE_CODE_BIN: "/opt/claude/bin/claude",
    CLAUDE_CODE_PACKAGE: "@anthropic-ai/claude-code@2.1.330",
    CLAUDE_CODE_TARBALL: "/opt/claude-code.tgz",
    QWEN_CODE_BIN: "/opt/qwen/bin/qwen",
    QWEN_CODE_PACKAGE: "@qwen-code/qwen-code@0.24.5",
    QWEN_CODE_TARBALL: "/opt/qwen-code.tgz",
    NODE_BIN: "/opt/node/bin/node",
    CODEX_BIN: "/opt/codex/bin/codex",
    CODEX_PACKAGE: "@openai/codex@0.170.0",
    CODEX_TARBALL: "/opt/codex-linux-x64.tgz",
    ENGINE_WORKERS: "http://10.0.0.6:30000/, http://10.0.0.7:30000",
    WORKERS: "auto",
  });
  assert.deepEqual({ ...config }, {
    port: 9000,
    host: "127.0.0.1",
    sglangUrl: "http://10.0.0.5:30000",
    engineWorkers: ["http://10.0.0.6:30000", "http://10.0.0.7:30000"],
    // Workers share the PostgreSQL store: `auto` is one per core, `:memory:` notwithstanding.
    workers: navigator.hardwareConcurrency,
    kvPath: ":memory:",
    adminToken: "admin-token-0123456789",
    tokenizerPath: "/models/qwen3",
    chatTemplatePath: "/models/qwen3/coder.jinja",
    toolCallParser: "qwen25",
    reasoningParser: "none",
    contextLength: 40_960,
    devOpenSessions: true,
    storeUrl: "postgres://gw:pw@db.internal:5432/rg",
    hostId: "gw-a.rack-2",
    storePoolSize: 4,
    storeTimeoutMs: 2500,
    maxBodyBytes: 2048,
    bodyTimeoutMs: 5000,
    engineApi: "vllm",
    engineUrl: "http://10.0.0.5:30000",
    vllmEndpoint: "completions",
    enginePlacement: "gateway",
    engineHealthIntervalMs: 500,
    engineSessions: true,
    engineSessionIdleS: 60,
    cacheSalt: "weight_version",
    engineConnections: 8,
    engineTimeoutMs: 60_000,
    pingIntervalMs: 50,
    roundtripPolicy: "keep",
    specialTokensInText: "live",
    thinkingHistory: "template",
    realignMaxTokens: 0,
    signingSecret: "signing-secret-0123456789",
    chainCacheTokens: 0,
    memoryBudgetMb: 768,
    tokenizerWorkers: 1,
    scriptedLatencyMs: 5,
    modelId: "qwen3-8b",
    imagePolicy: "vision",
    maxImageBytes: 2048,
    maxImagePixels: 4096,
    maxImagesPerRequest: 3,
    keepAttribution: true,
    retryAfterMs: 250,
    leaseTtlMs: 1000,
    lockWaitMs: 0,
    sessionRetentionMs: 60_000,
    rewardAllocation: "final_only",
    trainSideSegments: true,
    maxSegments: 8,
    maxSegmentTokens: 32_768,
    overlongSegments: "drop",
    routedExperts: true,
    sandboxBackend: "e2b",
    sandboxRoot: "/var/lib/rollout",
    sandboxOutputBytes: 4096,
    evalTimeoutMs: 120_000,
    evalVerdictTtlMs: 60_000,
    evalConcurrency: 16,
    judgers: { strict: { use: "./judgers/strict.ts", options: { level: 2 } } },
    defaultJudger: "strict",
    e2b: {
      apiKey: "e2b_0123456789",
      apiUrl: "http://127.0.0.1:3000",
      sandboxUrl: "http://127.0.0.1:49983",
      domain: "e2b.example",
      template: "swe-python",
      bootAttempts: 5,
      bootBackoffMs: 250,
    },
    rollout: {
      worker: false,
      concurrency: 8,
      bootConcurrency: 2,
      pollMs: 250,
      gatewayUrl: "http://gateway.internal:8080",
      agents: new Map([
        ["claude_code", {
          bin: "/opt/claude/bin/claude",
          package: "@anthropic-ai/claude-code@2.1.330",
          tarball: "/opt/claude-code.tgz",
          extra: {},
        }],
        ["qwen_code", {
          bin: "/opt/qwen/bin/qwen",
          package: "@qwen-code/qwen-code@0.24.5",
          tarball: "/opt/qwen-code.tgz",
          extra: { NODE_BIN: "/opt/node/bin/node" },
        }],
        ["codex", {
          bin: "/opt/codex/bin/codex",
          package: "@openai/codex@0.170.0",
          tarball: "/opt/codex-linux-x64.tgz",
          extra: {},
        }],
      ]),
    },
  });
});

Deno.test("resolveConfig() lists every variable it reads in CONFIG_VARIABLES", () => {
  assert.deepEqual([...CONFIG_VARIABLES].sort(), [
    "ADMIN_TOKEN",
    "BODY_TIMEOUT_MS",
    "CACHE_SALT",
    "CHAIN_CACHE_TOKENS",
    "CHAT_TEMPLATE",
    "CLAUDE_CODE_BIN",
    "CLAUDE_CODE_PACKAGE",
    "CLAUDE_CODE_TARBALL",
    "CODEX_BIN",
    "CODEX_PACKAGE",
    "CODEX_TARBALL",
    "CONTEXT_LENGTH",
    "DEFAULT_JUDGER",
    "DEV_OPEN_SESSIONS",
    "E2B_API_KEY",
    "E2B_API_URL",
    "E2B_BOOT_ATTEMPTS",
    "E2B_BOOT_BACKOFF_MS",
    "E2B_DOMAIN",
    "E2B_SANDBOX_URL",
    "E2B_TEMPLATE",
    "ENGINE_API",
    "ENGINE_CONNECTIONS",
    "ENGINE_HEALTH_INTERVAL_MS",
    "ENGINE_PLACEMENT",
    "ENGINE_SESSIONS",
    "ENGINE_SESSION_IDLE_S",
    "ENGINE_TIMEOUT_MS",
    "ENGINE_URL",
    "ENGINE_WORKERS",
    "EVAL_CONCURRENCY",
    "EVAL_TIMEOUT_MS",
    "EVAL_VERDICT_TTL_MS",
    "HOST",
    "HOST_ID",
    "IMAGE_POLICY",
    "JUDGERS",
    "KEEP_ATTRIBUTION",
    "KV_PATH",
    "LEASE_TTL_MS",
    "LOCK_WAIT_MS",
    "MAX_BODY_BYTES",
    "MAX_IMAGES_PER_REQUEST",
    "MAX_IMAGE_BYTES",
    "MAX_IMAGE_PIXELS",
    "MAX_SEGMENTS",
    "MAX_SEGMENT_TOKENS",
    "MEMORY_BUDGET_MB",
    "MODEL_ID",
    "NODE_BIN",
    "OVERLONG_SEGMENTS",
    "PING_INTERVAL_MS",
    "PORT",
    "QWEN_CODE_BIN",
    "QWEN_CODE_PACKAGE",
    "QWEN_CODE_TARBALL",
    "REALIGN_MAX_TOKENS",
    "REASONING_PARSER",
    "RETRY_AFTER_MS",
    "REWARD_ALLOCATION",
    "ROLLOUT_BOOT_CONCURRENCY",
    "ROLLOUT_CONCURRENCY",
    "ROLLOUT_GATEWAY_URL",
    "ROLLOUT_POLL_MS",
    "ROLLOUT_WORKER",
    "ROUNDTRIP_POLICY",
    "ROUTED_EXPERTS",
    "SANDBOX_BACKEND",
    "SANDBOX_OUTPUT_BYTES",
    "SANDBOX_ROOT",
    "SCRIPTED_LATENCY_MS",
    "SESSION_RETENTION_MS",
    "SGLANG_URL",
    "SIGNING_SECRET",
    "SPECIAL_TOKENS_IN_TEXT",
    "STORE_POOL_SIZE",
    "STORE_TIMEOUT_MS",
    "STORE_URL",
    "THINKING_HISTORY",
    "TOKENIZER_PATH",
    "TOKENIZER_WORKERS",
    "TOOL_CALL_PARSER",
    "TRAIN_SIDE_SEGMENTS",
    "VLLM_ENDPOINT",
    "WORKERS",
  ]);
});

Deno.test("resolveConfig() throws a ConfigError naming the variable for each bad value", () => {
  const bad: [string, string][] = [
    ["PORT", "abc"],
    ["PORT", "65536"],
    ["PORT", "80.5"],
    ["CONTEXT_LENGTH", "-1"],
    ["CONTEXT_LENGTH", "255"],
    ["DEV_OPEN_SESSIONS", "maybe"],
    ["SGLANG_URL", "ftp://x"],
    ["SGLANG_URL", "localhost:30000"],
    ["ROUNDTRIP_POLICY", "drop"],
    ["SPECIAL_TOKENS_IN_TEXT", "off"],
    ["THINKING_HISTORY", "drop"],
    ["REALIGN_MAX_TOKENS", "-1"],
    ["ADMIN_TOKEN", "short"],
    ["SIGNING_SECRET", "fifteen-chars!!"],
    ["MAX_BODY_BYTES", "1023"],
    ["ENGINE_CONNECTIONS", "0"],
    ["ENGINE_TIMEOUT_MS", "999"],
    ["PING_INTERVAL_MS", "9"],
    ["CHAIN_CACHE_TOKENS", "-5"],
    ["MEMORY_BUDGET_MB", "100"],
    ["MEMORY_BUDGET_MB", "lots"],
    ["SCRIPTED_LATENCY_MS", "60001"],
    ["TOKENIZER_WORKERS", "17"],
    ["MODEL_ID", "two words"],
    ["IMAGE_POLICY", "drop"],
    ["KEEP_ATTRIBUTION", "perhaps"],
    ["RETRY_AFTER_MS", "600001"],
    ["LEASE_TTL_MS", "99"],
    ["LOCK_WAIT_MS", "-1"],
    ["SESSION_RETENTION_MS", "999"],
    ["REWARD_ALLOCATION", "even"],
    ["TRAIN_SIDE_SEGMENTS", "sometimes"],
    ["MAX_SEGMENTS", "0"],
    ["MAX_SEGMENT_TOKENS", "-1"],
    ["OVERLONG_SEGMENTS", "truncate"],
    ["SANDBOX_BACKEND", "Docker!"],
    ["SANDBOX_ROOT", "relative/dir"],
    ["SANDBOX_OUTPUT_BYTES", "1023"],
    ["EVAL_TIMEOUT_MS", "99"],
    ["EVAL_CONCURRENCY", "0"],
    ["JUDGERS", "{not json}"],
    ["JUDGERS", '{"x": {"module": "./x.ts"}}'],
    ["DEFAULT_JUDGER", "two words"],
    ["E2B_API_URL", "api.e2b.app"],
    ["E2B_BOOT_ATTEMPTS", "0"],
    ["ROLLOUT_WORKER", "sometimes"],
    ["ROUTED_EXPERTS", "sometimes"],
    ["ROLLOUT_CONCURRENCY", "0"],
    ["ROLLOUT_POLL_MS", "5"],
    ["ROLLOUT_GATEWAY_URL", "gateway:8080"],
    ["CLAUDE_CODE_BIN", "claude"],
    ["QWEN_CODE_BIN", "qwen"],
    ["QWEN_CODE_TARBALL", "qwen.tgz"],
    ["NODE_BIN", "node"],
    ["CODEX_BIN", "codex"],
    ["TOOL_CALL_PARSER", "Qwen 2.5"],
    ["REASONING_PARSER", "x".repeat(65)],
  ];
  for (const [variable, value] of bad) assertRefused(variable, value);
});

Deno.test("resolveConfig() wants an E2B API key when the sandbox backend is e2b", () => {
  assert.throws(() => resolveConfig({ SANDBOX_BACKEND: "e2b" }), (error: unknown) => {
    assert.ok(error instanceof ConfigError);
    assert.equal(error.variable, "E2B_API_KEY");
    assert.equal(error.message, "Invalid E2B_API_KEY: required when SANDBOX_BACKEND is e2b");
    return true;
  });
});

Deno.test("resolveConfig() says what a good value looks like", () => {
  assert.throws(() => resolveConfig({ PORT: "abc" }), {
    message: 'Invalid PORT: expected an integer from 0 to 65535, got "abc"',
  });
  assert.throws(() => resolveConfig({ ADMIN_TOKEN: "short" }), {
    message: "Invalid ADMIN_TOKEN: expected at least 16 characters, got *** (5 characters)",
  });
});

Deno.test("resolveConfig() accepts the bounds of each integer range", () => {
  assert.equal(resolveConfig({ PORT: "0" }).port, 0);
  assert.equal(resolveConfig({ PORT: "65535" }).port, 65_535);
  assert.equal(resolveConfig({ CONTEXT_LENGTH: "256" }).contextLength, 256);
  assert.equal(resolveConfig({ ADMIN_TOKEN: "a".repeat(16) }).adminToken, "a".repeat(16));
});

Deno.test("resolveConfig() reads each spelling of a boolean", () => {
  for (const yes of ["1", "true", "yes", "on"]) {
    assert.equal(resolveConfig({ DEV_OPEN_SESSIONS: yes }).devOpenSessions, true, yes);
  }
  for (const no of ["0", "false", "no", "off"]) {
    assert.equal(resolveConfig({ DEV_OPEN_SESSIONS: no }).devOpenSessions, false, no);
  }
});

Deno.test("resolveConfig() trims values and treats blank ones as unset", () => {
  const config = resolveConfig({ PORT: " 9000 ", HOST: "", KV_PATH: "   ", ADMIN_TOKEN: " " });
  assert.equal(config.port, 9000);
  assert.equal(config.host, "127.0.0.1");
  assert.equal(config.kvPath, "./data/gateway.kv");
  assert.equal(config.adminToken, null);
});

Deno.test("resolveConfig() removes trailing slashes from SGLANG_URL", () => {
  assert.equal(
    resolveConfig({ SGLANG_URL: "http://127.0.0.1:30000/" }).sglangUrl,
    "http://127.0.0.1:30000",
  );
  assert.equal(
    resolveConfig({ SGLANG_URL: "https://engine.example/v1//" }).sglangUrl,
    "https://engine.example/v1",
  );
});

Deno.test("WORKERS: one per core by default, as given with a KV file, refused above 1 in memory", () => {
  assert.equal(resolveConfig({}).workers, navigator.hardwareConcurrency);
  assert.equal(resolveConfig({ WORKERS: "3" }).workers, 3);
  assert.equal(resolveConfig({ KV_PATH: ":memory:" }).workers, 1);
  assert.equal(resolveConfig({ KV_PATH: ":memory:", WORKERS: "1" }).workers, 1);
  assert.throws(
    () => resolveConfig({ KV_PATH: ":memory:", WORKERS: "2" }),
    (error: unknown) => error instanceof ConfigError && error.variable === "WORKERS",
  );
  assert.throws(
    () => resolveConfig({ WORKERS: "0" }),
    /Invalid WORKERS: expected auto or an integer from 1 to 256, got "0"/,
  );
  assert.throws(
    () => resolveConfig({ ENGINE_WORKERS: "http://a:1,ftp://b" }),
    /Invalid ENGINE_WORKERS/,
  );
});

Deno.test("resolveConfig() returns a frozen configuration", () => {
  const config = resolveConfig({ PORT: "9000" });
  assert.ok(Object.isFrozen(config));
  assert.throws(() => {
    (config as { port: number }).port = 1;
  }, TypeError);
  assert.equal(config.port, 9000);
});

Deno.test("defaultTokenizerPath() points at a folder holding tokenizer.json and its config", async () => {
  const path = defaultTokenizerPath();
  assert.ok(!path.endsWith("/"), path);
  assert.ok((await Deno.stat(path)).isDirectory);
  assert.ok((await Deno.stat(`${path}/tokenizer.json`)).isFile);
  assert.ok((await Deno.stat(`${path}/tokenizer_config.json`)).isFile);
});

Deno.test("docs/configuration.md lists every variable resolveConfig() reads", async () => {
  const table = await Deno.readTextFile(new URL("../../docs/configuration.md", import.meta.url));
  const listed = new Set([...table.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1]));
  assert.deepEqual(CONFIG_VARIABLES.filter((name) => !listed.has(name)), []);
});
