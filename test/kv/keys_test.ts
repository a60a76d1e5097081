import assert from "node:assert/strict";
import { keys, type ParsedKey, parseKey } from "../../lib/kv/mod.ts";

/**
 * Every builder of `keys` (the type makes a new one fail until it is listed): the key it builds
 * for a stored entry (a blob's prefix with a chunk position), and what `parseKey` gives back,
 * or `prefix` for a builder of list prefixes only.
 */
const CASES: {
  readonly [B in keyof typeof keys]: {
    readonly key: Deno.KvKey;
    readonly parsed: ParsedKey | "prefix";
  };
} = {
  session: { key: keys.session("s1"), parsed: { kind: "session", sessionId: "s1" } },
  chain: {
    key: keys.chain("s1", "c2"),
    parsed: { kind: "chain", sessionId: "s1", chainId: "c2" },
  },
  chains: { key: keys.chains("s1"), parsed: "prefix" },
  turn: {
    key: keys.turn("s1", "c2", 3, "rid4"),
    parsed: { kind: "turn", sessionId: "s1", chainId: "c2", index: 3, rid: "rid4" },
  },
  turns: { key: keys.turns("s1", "c2"), parsed: "prefix" },
  turnChunk: {
    key: keys.turnChunk("s1", "c2", 3, "rid4", 5),
    parsed: { kind: "turn_chunk", sessionId: "s1", chainId: "c2", index: 3, rid: "rid4", chunk: 5 },
  },
  chainChunks: { key: keys.chainChunks("s1", "c2"), parsed: "prefix" },
  sessionChunks: { key: keys.sessionChunks("s1"), parsed: "prefix" },
  turnMessages: {
    key: [...keys.turnMessages("s1", "c2", 3, "rid4"), 5],
    parsed: {
      kind: "turn_messages",
      sessionId: "s1",
      chainId: "c2",
      index: 3,
      rid: "rid4",
      chunk: 5,
    },
  },
  sessionMessages: { key: keys.sessionMessages("s1"), parsed: "prefix" },
  turnRoutes: {
    key: [...keys.turnRoutes("s1", "c2", 3, "rid4"), 5],
    parsed: {
      kind: "turn_routes",
      sessionId: "s1",
      chainId: "c2",
      index: 3,
      rid: "rid4",
      chunk: 5,
    },
  },
  sessionRoutes: { key: keys.sessionRoutes("s1"), parsed: "prefix" },
  sessionTurns: { key: keys.sessionTurns("s1"), parsed: "prefix" },
  lease: { key: keys.lease("s1"), parsed: { kind: "lease", sessionId: "s1" } },
  chainLease: {
    key: keys.chainLease("s1", "c2"),
    parsed: { kind: "chain_lease", sessionId: "s1", chainId: "c2" },
  },
  chainLeases: { key: keys.chainLeases("s1"), parsed: "prefix" },
  replay: {
    key: keys.replay("s1", "digest6"),
    parsed: { kind: "replay", sessionId: "s1", bodyDigest: "digest6" },
  },
  replays: { key: keys.replays("s1"), parsed: "prefix" },
  agent: {
    key: keys.agent("s1", "agent7"),
    parsed: { kind: "agent", sessionId: "s1", agentId: "agent7" },
  },
  agents: { key: keys.agents("s1"), parsed: "prefix" },
  reward: { key: keys.reward("s1"), parsed: { kind: "reward", sessionId: "s1" } },
  rewardBlob: {
    key: [...keys.rewardBlob("s1", "v8"), 0],
    parsed: { kind: "reward_blob", sessionId: "s1", version: "v8", chunk: 0 },
  },
  rewardBlobs: { key: keys.rewardBlobs("s1"), parsed: "prefix" },
  image: {
    key: keys.image("s1", "d1"),
    parsed: { kind: "image", sessionId: "s1", digest: "d1", chunk: null },
  },
  sessionImages: { key: keys.sessionImages("s1"), parsed: "prefix" },
  engineFailures: {
    key: keys.engineFailures("s1"),
    parsed: { kind: "engine_failures", sessionId: "s1" },
  },
  rolloutRetries: {
    key: keys.rolloutRetries("grp_1"),
    parsed: { kind: "rollout_retries", groupId: "grp_1" },
  },
  rolloutBootBackoff: {
    key: keys.rolloutBootBackoff("host:gw-a"),
    parsed: { kind: "rollout_boot_backoff", scope: "host:gw-a" },
  },
  sessions: { key: keys.sessions(), parsed: "prefix" },
  expiry: {
    key: keys.expiry(1_700_000_000_000, "s1"),
    parsed: { kind: "expiry", expiresAt: 1_700_000_000_000, sessionId: "s1" },
  },
  expiries: { key: keys.expiries(), parsed: "prefix" },
  rolloutGroup: {
    key: keys.rolloutGroup("grp_1"),
    parsed: { kind: "rollout_group", groupId: "grp_1" },
  },
  rolloutGroupTime: {
    key: keys.rolloutGroupTime(1_700_000_000_000, "grp_1"),
    parsed: { kind: "rollout_group_time", createdAt: 1_700_000_000_000, groupId: "grp_1" },
  },
  rolloutGroupTimes: { key: keys.rolloutGroupTimes(), parsed: "prefix" },
  rolloutTask: {
    key: [...keys.rolloutTask("grp_1"), 2],
    parsed: { kind: "rollout_task", groupId: "grp_1", chunk: 2 },
  },
  taskVerdict: {
    key: keys.taskVerdict("base_run", "d1"),
    parsed: { kind: "task_verdict", verdict: "base_run", digest: "d1" },
  },
  taskVerdictLease: {
    key: keys.taskVerdictLease("validation", "d1"),
    parsed: { kind: "task_verdict_lease", verdict: "validation", digest: "d1" },
  },
  rolloutTree: {
    key: [...keys.rolloutTree("grp_1"), 0],
    parsed: { kind: "rollout_tree", groupId: "grp_1", chunk: 0 },
  },
  rolloutJob: { key: keys.rolloutJob("job_a"), parsed: { kind: "rollout_job", jobId: "job_a" } },
  rolloutActive: {
    key: keys.rolloutActive("job_a"),
    parsed: { kind: "rollout_active", jobId: "job_a" },
  },
  rolloutActives: { key: keys.rolloutActives(), parsed: "prefix" },
  rolloutLease: {
    key: keys.rolloutLease("job_a"),
    parsed: { kind: "rollout_lease", jobId: "job_a" },
  },
  rolloutBlob: {
    key: [...keys.rolloutBlob("job_a", 1, "patch"), 3],
    parsed: { kind: "rollout_blob", jobId: "job_a", attempt: 1, name: "patch", chunk: 3 },
  },
  rolloutAttemptBlobs: { key: keys.rolloutAttemptBlobs("job_a", 1), parsed: "prefix" },
  rolloutBlobs: { key: keys.rolloutBlobs("job_a"), parsed: "prefix" },
  rolloutExpiry: {
    key: keys.rolloutExpiry(1_700_000_000_000, "job_a"),
    parsed: { kind: "rollout_expiry", expiresAt: 1_700_000_000_000, jobId: "job_a" },
  },
  rolloutExpiries: { key: keys.rolloutExpiries(), parsed: "prefix" },
  rolloutBootSlot: {
    key: keys.rolloutBootSlot("backend:e2b", 4),
    parsed: { kind: "rollout_boot_slot", scope: "backend:e2b", slot: 4 },
  },
  secret: { key: keys.secret("hmac"), parsed: { kind: "secret", name: "hmac" } },
  healthProbe: { key: keys.healthProbe(), parsed: { kind: "health_probe" } },
  metrics: { key: keys.metrics("h1", 1), parsed: { kind: "metrics", host: "h1", worker: 1 } },
  metricsAll: { key: keys.metricsAll(), parsed: "prefix" },
  turnReplays: {
    key: keys.turnReplays("s1", "c0", "rid4"),
    parsed: { kind: "turn_replays", sessionId: "s1", chainId: "c0", rid: "rid4" },
  },
  sessionReplays: { key: keys.sessionReplays("s1"), parsed: "prefix" },
  chainReplays: { key: keys.chainReplays("s1", "c0"), parsed: "prefix" },
};

Deno.test("parseKey() gives back the parts of a key of every family", () => {
  for (const [builder, { key, parsed }] of Object.entries(CASES)) {
    if (parsed === "prefix") continue;
    assert.deepEqual(parseKey(key), parsed, builder);
    assert.equal(parsed.kind, key[0], `${builder}: the kind is the key's first part`);
  }
});

Deno.test("parseKey() calls a list prefix, a foreign key and a part of the wrong type other", () => {
  const prefixes = Object.entries(CASES).filter(([, { parsed }]) => parsed === "prefix");
  assert.ok(prefixes.length > 0);
  for (const [builder, { key }] of prefixes) {
    assert.deepEqual(parseKey(key), { kind: "other", key }, builder);
  }
  for (
    const key of [
      [],
      ["elsewhere", "s1"],
      ["session", 1],
      ["turn", "s1", "c2", "3", "rid4"],
      ["turn_chunk", "s1", "c2", 3, "rid4", 5, 6],
      ["expiry", "s1", 1_700_000_000_000],
    ] satisfies Deno.KvKey[]
  ) {
    assert.deepEqual(parseKey(key), { kind: "other", key }, JSON.stringify(key));
  }
});
