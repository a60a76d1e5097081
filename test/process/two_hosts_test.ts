/**
 * Two gateway hosts on one PostgreSQL store: separate processes, separate working and sandbox
 * folders, no file in common, one engine. A Claude-Code-sized session whose turns alternate
 * between the hosts is one exact chain; 32 sessions spread at random over both are each exact; a
 * host killed mid-turn loses and forks nothing when the agent retries on the other; and any
 * host's `/metrics` shows both hosts' counts, summing exactly.
 */
import assert from "node:assert/strict";
import { keys } from "../../lib/kv/mod.ts";
import { pollUntil } from "../../lib/timing/mod.ts";
import { answered, body, opening } from "../../bench/_claude_code_load.ts";
import { assertChainExact, callsOfSample } from "../_chain_exact.ts";
import { ADMIN_HEADERS } from "../_gateway.ts";
import { type PostgresCluster, startPostgres } from "../_postgres.ts";
import { countable, parseExposition } from "../_prometheus.ts";
import { openSession, samples } from "./_gateway_process.ts";
import { bashCall, fleet, turn } from "./_fleet.ts";
import { processesWith, waitFor } from "../_host.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import { awaitJob, submit } from "../rollout/_rollout.ts";
import { harborFixture } from "../evaluate/_harbor.ts";
import { hostCommand } from "../../lib/sandbox/mod.ts";

/** One cluster for the file's tests, each on a database of its own. */
let cluster: PostgresCluster | null = null;

Deno.test("two hosts on one PostgreSQL store: a session alternating between them is one exact chain, 32 at random are each exact, and /metrics sums both", async () => {
  let turns = 0;
  cluster ??= await startPostgres();
  const f = await fleet(() => bashCall(`step ${turns++}`), {}, cluster);
  try {
    const [a, b] = f.hosts;
    // One Claude-Code-sized session, every turn on the other host.
    const { id, token } = await openSession(a.url);
    const messages = opening(0);
    for (let k = 0; k < 8; k++) {
      answered(messages, await turn(f.hosts[k % 2].url, token, messages), k);
    }
    const alternating = await samples(b.url, id);
    assertChainExact(f.calls.slice(0, 8), alternating, "alternating");
    assert.deepEqual(await samples(a.url, id), alternating);

    // 32 sessions at once, each turn on a host picked at random.
    const sessions = await Promise.all(Array.from({ length: 32 }, () => openSession(a.url)));
    await Promise.all(sessions.map(async ({ token }, s) => {
      const messages = opening(s + 1);
      for (let k = 0; k < 4; k++) {
        const host = f.hosts[Math.floor(Math.random() * 2)];
        answered(messages, await turn(host.url, token, messages), 100 * s + k);
      }
    }));
    for (const { id } of sessions) {
      const recorded = await samples(f.hosts[Math.floor(Math.random() * 2)].url, id);
      assertChainExact(callsOfSample(f.calls, recorded[0]), recorded, id);
      assert.equal(recorded[0].turns.length, 4);
    }

    // Either host's scrape shows both hosts' counts, once each: they sum to every turn served.
    const served = 8 + 32 * 4;
    const summed = async (url: string) => {
      const response = await fetch(`${url}/metrics`, { headers: ADMIN_HEADERS });
      const values = countable(await parseExposition(await response.text()));
      let total = 0;
      const hosts = new Set<string>();
      for (const [series, value] of values) {
        const match = series.match(/^rollout_gateway_turns_total\{host="([^"]+)",route=/);
        if (match) (total += value, hosts.add(match[1]));
      }
      return { total, hosts: [...hosts].sort() };
    };
    for (const host of f.hosts) {
      const published = await pollUntil(async () => (await summed(host.url)).total === served, {
        timeoutMs: 20_000,
        intervalMs: 200,
      });
      assert.ok(published, `${host.url}: ${JSON.stringify(await summed(host.url))}`);
      assert.deepEqual((await summed(host.url)).hosts, ["gw-a", "gw-b"]);
    }
  } finally {
    await f.close();
  }
});

Deno.test("a host killed mid-turn on a shared PostgreSQL store: the agent's retry on the other host loses and forks nothing", async () => {
  let slow = true;
  let turns = 0;
  cluster ??= await startPostgres();
  const f = await fleet(
    () => {
      const text = bashCall(`step ${turns++}`);
      // The third turn is slow the first time: its host is killed while it generates.
      if (turns === 3 && slow) return (slow = false, { text, latencyMs: 1_000 });
      return text;
    },
    {},
    cluster,
  );
  try {
    const [a, b] = f.hosts;
    const { id, token } = await openSession(a.url);
    const messages = opening(0);
    for (let k = 0; k < 2; k++) answered(messages, await turn(a.url, token, messages), k);
    const before = await samples(b.url, id);
    const killedTurn = fetch(`${a.url}/v1/messages`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body(messages),
    }).then((response) => response.status, (error: unknown) => error);
    assert.ok(
      await pollUntil(() => f.calls.length === 3, { timeoutMs: 10_000, intervalMs: 10 }),
      "the third turn reached the engine",
    );
    const killedRid = f.calls[2].rid;
    await a.kill("SIGKILL");
    assert.ok(await killedTurn instanceof TypeError, "the agent saw its connection fail");

    // The agent retries the same request on the other host: it waits out the dead lease.
    answered(messages, await turn(b.url, token, messages), 2);
    const after = await samples(b.url, id);
    assert.deepEqual(
      f.calls.map((call) => call.rid).filter((rid) => rid !== killedRid).length,
      3,
    );
    assertChainExact(f.calls.filter((call) => call.rid !== killedRid), after);
    assert.deepEqual(after[0].turns.slice(0, 2), before[0].turns, "committed turns unchanged");
    assert.deepEqual(f.calls[3].inputIds, f.calls[2].inputIds, "the same prompt, from the store");
    // Nothing of the killed attempt is in the store.
    const written: string[] = [];
    for (const prefix of [keys.sessionTurns(id), keys.sessionChunks(id)]) {
      for await (const entry of f.store.list({ prefix })) written.push(JSON.stringify(entry.key));
    }
    assert.equal(written.filter((key) => key.includes(killedRid)).length, 0);
    // A host started again in its place serves the same samples.
    const again = await f.spawn("gw-a");
    assert.deepEqual(await samples(again.url, id), after);
  } finally {
    await f.close();
  }
});

Deno.test("a rollout group submitted to one host completes on another after the first is killed", async () => {
  cluster ??= await startPostgres();
  const marker = `rg_hosts_${crypto.randomUUID().slice(0, 8)}`;
  // The agent's turns are slow, so its host dies while it works.
  const f = await fleet(
    () => ({ text: "Done.", latencyMs: 100 }),
    { LEASE_TTL_MS: "2000", ROLLOUT_POLL_MS: "100", ROLLOUT_CONCURRENCY: "2" },
    cluster,
    ["gw-a"],
  );
  try {
    const [a] = f.hosts;
    const { task } = await fixtureTask("python_unittest");
    const agent = { prompt_template: `{problem_statement}\n${marker}` };
    const { group_id, jobs } = await submit(a, { task, n: 2, max_attempts: 2, agent });
    for (const { id } of jobs) {
      await awaitJob(a, id, (view) => view.phase === "agent" && view.progress.elapsed_ms > 0);
    }
    await waitFor(async () => (await processesWith(marker)).length > 0, "the agents to start");
    await a.kill("SIGKILL");

    // Another host, with its own folders, on the same store: it takes the jobs over.
    const b = await f.spawn("gw-b");
    for (const { id } of jobs) {
      const view = await awaitJob(b, id);
      assert.equal(view.phase, "done", JSON.stringify(view));
      assert.equal(view.attempt, 2);
      assert.match(
        view.detail,
        /^Attempt 1 of 2 lost its worker \(gw-a:\d+\) in phase agent$/,
      );
      assert.equal(typeof view.result.reward.score, "number");
    }
    const group = await (await fetch(`${b.url}/rollout?group_id=${group_id}`, {
      headers: ADMIN_HEADERS,
    })).json();
    assert.equal(group.complete, true, JSON.stringify(group));
  } finally {
    await f.close();
    await cluster?.close();
    cluster = null;
  }
});

Deno.test("a Harbor group submitted to a host that then dies, its folders and the task folder gone, runs on another host from the store", async () => {
  cluster ??= await startPostgres();
  const f = await fleet(() => ({ text: "Done." }), { ROLLOUT_POLL_MS: "100" }, cluster, []);
  const harbor = await Deno.makeTempDir({ prefix: "rg-harbor-task-" });
  try {
    await hostCommand("cp", ["-R", `${harborFixture("fizzbuzz")}/.`, harbor]);
    // The submitting host runs no jobs: it builds environment/ as a repository in its own cache.
    const a = await f.spawn("gw-a", { ROLLOUT_WORKER: "false" });
    const { jobs } = await submit(a, { task: { harbor }, n: 1 });
    const built = `${f.folders.get("gw-a")}/sandboxes/cache/harbor`;
    assert.equal([...Deno.readDirSync(built)].length, 1, "the work tree was built on gw-a");
    await a.kill("SIGKILL");
    await Deno.remove(f.folders.get("gw-a")!, { recursive: true });
    await Deno.remove(harbor, { recursive: true });

    const b = await f.spawn("gw-b");
    const view = await awaitJob(b, jobs[0].id);
    assert.equal(view.phase, "done", JSON.stringify(view));
    assert.equal(view.attempt, 1);
    // Graded by the task's own tests in the tree gw-b unpacked: the agent fixed nothing.
    assert.deepEqual([view.result.reward.score, view.result.reward.verifier.file], [
      0,
      "reward.txt",
    ]);
    const unpacked = [...Deno.readDirSync(`${f.folders.get("gw-b")}/sandboxes/cache/harbor`)];
    assert.equal(unpacked.length, 1);
  } finally {
    await Deno.remove(harbor, { recursive: true }).catch(() => {});
    await f.close();
    await cluster?.close();
    cluster = null;
  }
});
