/**
 * `POST /evaluate` (admin token): grades a patch for a task in a fresh sandbox and answers with
 * the reward and its evidence. `POST /evaluate/validate` proves a task before rollouts are spent
 * on it: its tests twice at the base commit and twice with its gold patch, the verdict kept. The task is a spec, or a Harbor task folder (`{harbor: dir}`)
 * resolved into one first. At most `EVAL_CONCURRENCY` evaluations run at once per process;
 * the rest wait. A caller that leaves takes its evaluation down with it: the sandbox is killed.
 *
 * Served alone with `deno serve -A functions/evaluate.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { z } from "zod";
import {
  evaluate,
  harborGold,
  type HarborRef,
  HarborRefSchema,
  MAX_SOLUTION_PATCH_BYTES,
  resolveHarborTask,
  type Task,
  TaskSchema,
  validateTask,
} from "../lib/evaluate/mod.ts";
import { admin } from "./_admin.ts";
import { type AdminDeps, type Deps, lazyApp } from "./_deps.ts";
import { errorOptions, errorResponse, newRequestId, readJson, validate } from "./_http.ts";
import { validationJson } from "./_views.ts";

const EvaluateBody = z.strictObject({
  task: TaskSchema,
  /** A unified diff against the base commit; empty when the agent changed nothing. */
  patch: z.string(),
});

/** The body whose task has a `harbor` key: a Harbor task folder. */
const HarborEvaluateBody = EvaluateBody.extend({ task: HarborRefSchema });

const ValidateBody = z.strictObject({
  task: TaskSchema,
  /**
   * The task's known fix, a unified diff against the base commit: with it, every test must pass.
   * A Harbor task folder's `solution/solve.sh` makes one when this is not given.
   */
  gold_patch: z.string().min(1).max(MAX_SOLUTION_PATCH_BYTES).optional(),
});

/** The validate body whose task is a Harbor task folder. */
const HarborValidateBody = ValidateBody.extend({ task: HarborRefSchema });

/** Whether a raw body's task names a Harbor task folder. */
function namesHarborTask(raw: unknown): boolean {
  const task = (raw as { task?: unknown } | null)?.task;
  return typeof task === "object" && task !== null && Object.hasOwn(task, "harbor");
}

/** The task a body names: its spec, or a Harbor task folder's resolved into one. */
async function taskOf(deps: EvaluateAppDeps, given: Task | HarborRef): Promise<Task> {
  if (!("harbor" in given)) return given;
  const resolved = await resolveHarborTask(given, {
    cacheDir: deps.evaluation.cacheDir,
    runsImages: deps.evaluation.backend.capabilities.runsImages,
  });
  return resolved.task;
}

/** What the evaluate app uses. */
export type EvaluateAppDeps = AdminDeps & Pick<Deps, "evalSlots" | "evaluation">;

/** The evaluate app over `deps`. */
export function createEvaluateApp(deps: EvaluateAppDeps): Hono {
  const app = new Hono();
  app.use("/evaluate", admin(deps));
  app.post("/evaluate", async (c) => {
    const raw = await readJson(c.req.raw, deps.config);
    const body = namesHarborTask(raw)
      ? validate(HarborEvaluateBody, raw)
      : validate(EvaluateBody, raw);
    const task = await taskOf(deps, body.task);
    const signal = c.req.raw.signal;
    const request = { task, patch: body.patch, signal };
    const result = await deps.evalSlots.run(() => evaluate(deps.evaluation, request), signal);
    return c.json(result);
  });
  app.use("/evaluate/validate", admin(deps));
  app.post("/evaluate/validate", async (c) => {
    const raw = await readJson(c.req.raw, deps.config);
    const body = namesHarborTask(raw)
      ? validate(HarborValidateBody, raw)
      : validate(ValidateBody, raw);
    const signal = c.req.raw.signal;
    const task = await taskOf(deps, body.task);
    const gold = body.gold_patch !== undefined
      ? { patch: body.gold_patch, source: "request" as const }
      : "harbor" in body.task
      ? await harborGold(deps.evaluation, task, body.task.harbor, signal)
      : null;
    const slot = <T>(work: () => Promise<T>) => deps.evalSlots.run(work, signal);
    const { verdict, kept } = await validateTask(
      { ...deps.evaluation, slot },
      { task, gold, signal },
    );
    return c.json(validationJson(verdict, kept));
  });
  app.onError((error) => errorResponse(error, newRequestId(), errorOptions(deps)));
  return app;
}

export default lazyApp(createEvaluateApp);
