/**
 * Each function served alone (`deno serve -A functions/<name>.ts`), each process with its own
 * working and sandbox folders, all on one PostgreSQL store: the trainer's sessions on one, the
 * agents' protocols on another, `/evaluate` on a third and `/rollout` with its worker on a
 * fourth, whose agents reach the agents' process. A session opened on the first is recorded by
 * the second and exported by the first; a patch is graded; a rollout job runs to its reward.
 */
import assert from "node:assert/strict";
import { startScriptedEngine } from "../../lib/scripted_engine/mod.ts";
import { assertChainExact } from "../_chain_exact.ts";
import { ADMIN_HEADERS, qwen3 } from "../_gateway.ts";
import { startPostgres } from "../_postgres.ts";
import { fixtureTask } from "../evaluate/_tasks.ts";
import { awaitJob, submit } from "../rollout/_rollout.ts";
import {
  followUp,
  type GatewayProcess,
  openSession,
  postMessages,
  samples,
  spawnGateway,
} from "./_gateway_process.ts";
import { bashCall } from "./_fleet.ts";

Deno.test("each function served alone by its own process on one PostgreSQL store: sessions, agents, evaluate and rollout", async () => {
  const cluster = await startPostgres();
  // The trainer's session's three turns call a tool; the rollout's agent is told it is done.
  let calls = 0;
  const engine = await startScriptedEngine({
    tokenizer: await qwen3(),
    script: () => calls++ < 3 ? bashCall("ls") : "Done.",
  });
  const folders: string[] = [];
  const processes: GatewayProcess[] = [];
  const serve = async (name: string, env: Record<string, string> = {}) => {
    const folder = await Deno.makeTempDir({ prefix: `rg-${name}-` });
    folders.push(folder);
    const gateway = await spawnGateway(
      {
        STORE_URL: url,
        STORE_POOL_SIZE: "4",
        HOST_ID: name,
        ENGINE_URL: engine.url,
        SANDBOX_ROOT: `${folder}/sandboxes`,
        ...env,
      },
      folder,
      name,
    );
    processes.push(gateway);
    return gateway;
  };
  const url = await cluster.database();
  try {
    const sessions = await serve("sessions");
    const agents = await serve("agents");
    const evaluate = await serve("evaluate");
    const rollout = await serve("rollout", {
      ROLLOUT_GATEWAY_URL: agents.url,
      ROLLOUT_POLL_MS: "100",
    });

    // The trainer opens a session on one process; the agent's turns go to another.
    const { id, token } = await openSession(sessions.url);
    let messages: unknown[] = [{ role: "user", content: "Look around." }];
    for (let k = 0; k < 3; k++) {
      const response = await postMessages(agents.url, token, messages);
      assert.equal(response.status, 200, await response.clone().text());
      messages = followUp(messages, await response.json(), k);
    }
    const recorded = await samples(sessions.url, id);
    assertChainExact(engine.calls.slice(0, 3), recorded);
    // The agents' process serves no trainer route, and the trainer's no agent route.
    assert.equal((await fetch(`${agents.url}/sessions`, { headers: ADMIN_HEADERS })).status, 404);
    const missing = await postMessages(sessions.url, token, messages);
    assert.equal(missing.status, 404);
    await missing.body?.cancel();

    // A patch graded by the evaluate process.
    const { task, gold } = await fixtureTask("python_unittest");
    const graded = await fetch(`${evaluate.url}/evaluate`, {
      method: "POST",
      headers: ADMIN_HEADERS,
      body: JSON.stringify({ task, patch: gold }),
    });
    const evidence = await graded.json();
    assert.equal(graded.status, 200, JSON.stringify(evidence));
    assert.equal(evidence.score, 1, JSON.stringify(evidence));

    // A rollout job submitted to the rollout process runs there, its agent talking to the agents'
    // process, and is read back from any process with the store.
    const submitted = await submit(rollout, { task, n: 1 });
    const done = await awaitJob(rollout, submitted.jobs[0].id);
    assert.equal(done.phase, "done", JSON.stringify(done));
    assert.equal(typeof done.result.reward.score, "number");
    const [agentSession] = done.sessions;
    const agentSamples = await samples(sessions.url, agentSession);
    assert.ok(
      agentSamples.length > 0,
      "the agent's turns were recorded through the agents' process",
    );
  } finally {
    for (const gateway of processes) await gateway.close();
    await engine.close();
    await cluster.close();
    for (const folder of folders) await Deno.remove(folder, { recursive: true });
  }
});
