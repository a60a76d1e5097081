/**
 * The rollout API (admin token): `POST /rollout` queues a group of agent episodes, `GET
 * /rollout/:id` shows one (with its samples once done), `GET /rollout?group_id=` lists a group,
 * `GET /rollout/groups/:group_id/samples` exports its done jobs' samples (a page at a time),
 * `DELETE /rollout/:id` cancels one. The jobs run on the rollout workers of every gateway process
 * sharing the KV.
 *
 * Served alone with `deno serve -A functions/rollout.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { z } from "zod";
import { InvalidRequestError } from "../lib/errors/mod.ts";
import {
  checkTaskRepo,
  harborGold,
  type HarborRef,
  type Task,
  TaskInvalidError,
  validateTask,
} from "../lib/evaluate/mod.ts";
import {
  checkJobId,
  FINAL_PHASES,
  getRolloutGroup,
  isEnvTask,
  JobNotFoundError,
  type JobSummary,
  readJobSummary,
  requestCancel,
  resolveHarborRollout,
  type RolloutRequest,
  RolloutRequestSchema,
  submitGroup,
  summarizeJob,
  waitFinished,
} from "../lib/rollout/mod.ts";
import { type SandboxBackend, sandboxBackendKind } from "../lib/sandbox/mod.ts";
import { SessionNotFoundError } from "../lib/session/mod.ts";
import { admin } from "./_admin.ts";
import { type AdminDeps, type Deps, lazyApp } from "./_deps.ts";
import { errorOptions, errorResponse, newRequestId, readJson, validate } from "./_http.ts";
import {
  exportGroupSamples,
  exportSamples,
  GroupPage,
  type SamplesDeps,
  SamplesQuery,
} from "./_samples.ts";
import { jobJson } from "./_views.ts";

const GroupQuery = z.strictObject({
  group_id: z.string().regex(/^grp_[0-9a-f]{24}$/, "a group id"),
});

/** What the rollout app uses. */
export type RolloutAppDeps =
  & AdminDeps
  & SamplesDeps
  & Pick<Deps, "evaluation" | "evalSlots" | "rollout" | "sandbox" | "sandboxes">;

/** The rollout app over `deps`. */
export function createRolloutApp(deps: RolloutAppDeps): Hono {
  const app = new Hono();
  app.use("/rollout", admin(deps));
  app.use("/rollout/*", admin(deps));

  app.post("/rollout", async (c) => {
    const raw = await readJson(c.req.raw, deps.config);
    let body = validate(RolloutRequestSchema, raw);
    const backend = body.sandbox.backend;
    if (backend !== undefined && !deps.sandboxes.has(backend)) {
      const why = sandboxBackendKind(backend)?.unavailable(deps.config);
      throw new InvalidRequestError(
        `sandbox.backend: "${backend}" is not configured here${why ? ` (${why})` : ""}`,
      );
    }
    let environment = null;
    const sandbox = deps.sandboxes.get(backend ?? deps.sandbox.name) ?? deps.sandbox;
    const harbor = "harbor" in body.task ? (body.task as HarborRef).harbor : null;
    if ("harbor" in body.task) {
      const resolved = await resolveHarborRollout(
        raw as Record<string, unknown>,
        body.task as HarborRef,
        { cacheDir: deps.evaluation.cacheDir, runsImages: sandbox.capabilities.runsImages },
      );
      body = validate(RolloutRequestSchema, resolved.body);
      environment = resolved.environment;
    }
    // What /evaluate would refuse at once is refused here, not by each job in turn.
    if (!isEnvTask(body.task)) await checkTaskRepo(body.task as Task, deps.evaluation.cacheDir);
    if (body.validate) await validateFirst(deps, body, sandbox, harbor, c.req.raw.signal);
    const { groupId, jobIds } = await submitGroup(deps.kv, body, { environment });
    deps.metrics.rolloutJobs.add(jobIds.length, "queued");
    deps.rollout.kick();
    return c.json({ group_id: groupId, jobs: jobIds.map((id) => ({ id })) }, 202);
  });

  app.get("/rollout", async (c) => {
    const { group_id } = validate(GroupQuery, c.req.query());
    const group = await getRolloutGroup(deps.kv, group_id);
    if (!group) throw new JobNotFoundError(group_id, "group");
    const jobs = await Promise.all(group.jobs.map((id) => readJobSummary(deps.kv, id)));
    return c.json({ group_id, ...groupOutcome(jobs), jobs: jobs.map(jobJson) });
  });

  app.get("/rollout/groups/:group_id/samples", async (c) => {
    const { group_id } = validate(GroupQuery, { group_id: c.req.param("group_id") });
    const { cursor, limit, ...rest } = c.req.query();
    const page = validate(GroupPage, { cursor, limit });
    const query = validate(SamplesQuery, rest);
    const group = await getRolloutGroup(deps.kv, group_id);
    if (!group) throw new JobNotFoundError(group_id, "group");
    const jobs = await Promise.all(group.jobs.map((id) => readJobSummary(deps.kv, id)));
    const exported = await exportGroupSamples(
      deps,
      jobs.map((job) => ({
        id: job.id,
        phase: job.phase,
        ended: FINAL_PHASES.has(job.phase),
        sessionId: job.sessionId,
      })),
      query,
      page,
    );
    return c.json({ group_id, ...exported });
  });

  app.get("/rollout/:id", async (c) => {
    const query = validate(SamplesQuery, c.req.query());
    const job = await readJobSummary(deps.kv, c.req.param("id"));
    // The samples are the session's, read when asked: the job keeps no copy of the tokens.
    let samples: unknown = null;
    if (job.phase === "done" && job.sessionId !== null) {
      samples = await exportSamples(deps, job.sessionId, query).catch((error) => {
        if (error instanceof SessionNotFoundError) return null; // past its retention
        throw error;
      });
    }
    const view = jobJson(job);
    return c.json({ ...view, result: view.result && { ...view.result, samples } });
  });

  app.delete("/rollout/:id", async (c) => {
    const id = c.req.param("id");
    checkJobId(id);
    await requestCancel(deps.kv, id);
    // Stopped at once when it runs here; elsewhere, its worker sees the record; when nobody
    // runs it, this process's next scan finishes it.
    if (!deps.rollout.cancelLocal(id)) deps.rollout.kick();
    const job = await waitFinished(deps.kv, id, deps.config.lockWaitMs);
    if (job === null) throw new JobNotFoundError(id);
    // 202 when it is still stopping (a worker elsewhere that has not yet looked).
    return c.json(
      jobJson(await summarizeJob(deps.kv, job)),
      FINAL_PHASES.has(job.phase) ? 200 : 202,
    );
  });

  app.onError((error) => errorResponse(error, newRequestId(), errorOptions(deps)));
  return app;
}

export default lazyApp((deps) => {
  // Served alone, this process runs jobs too (it needs ROLLOUT_GATEWAY_URL for its agents).
  if (deps.config.rollout.worker) deps.rollout.start();
  return createRolloutApp(deps);
});

/**
 * Whether a group came back whole: `complete` when every job ended with the agent's outcome (its
 * reward real), and the jobs that ended on the infrastructure after their attempts, whose
 * samples carry no reward: a trainer drops the group or renormalizes over the rest.
 */
function groupOutcome(
  jobs: readonly JobSummary[],
): { complete: boolean; agent_jobs: number; infra_jobs: string[] } {
  const agent = jobs.filter((job) => job.outcome === "agent").length;
  return {
    complete: agent === jobs.length,
    agent_jobs: agent,
    infra_jobs: jobs.filter((job) => job.outcome === "infra").map((job) => job.id),
  };
}

/**
 * Validates a rollout's task on the backend its jobs run on (a kept verdict is used), with the
 * request's gold patch, else a Harbor folder's `solution/solve.sh`.
 *
 * @throws {TaskInvalidError} when the task is not valid: nothing is queued.
 */
async function validateFirst(
  deps: RolloutAppDeps,
  body: RolloutRequest,
  backend: SandboxBackend,
  harbor: string | null,
  signal: AbortSignal,
): Promise<void> {
  const task = body.task as Task; // a tool environment's task was refused by the schema
  const evaluation = { ...deps.evaluation, backend };
  const given = typeof body.validate === "object" ? body.validate.gold_patch : null;
  const gold = given !== null
    ? { patch: given, source: "request" as const }
    : harbor !== null
    ? await harborGold(evaluation, task, harbor, signal)
    : null;
  const slot = <T>(work: () => Promise<T>) => deps.evalSlots.run(work, signal);
  const { verdict } = await validateTask({ ...evaluation, slot }, { task, gold, signal });
  if (!verdict.valid) throw new TaskInvalidError(verdict);
}
