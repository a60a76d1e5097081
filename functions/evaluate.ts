/**
 * `POST /evaluate` (admin token): grades a patch for a task in a fresh sandbox and answers with
 * the reward and its evidence. The task is a spec, or a Harbor task folder (`{harbor: dir}`)
 * resolved into one first. At most `EVAL_CONCURRENCY` evaluations run at once per process;
 * the rest wait. A caller that leaves takes its evaluation down with it: the sandbox is killed.
 *
 * Served alone with `deno serve -A functions/evaluate.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { z } from "zod";
import { evaluate, HarborRefSchema, resolveHarborTask, TaskSchema } from "../lib/evaluate/mod.ts";
import { admin } from "./_admin.ts";
import { type AdminDeps, type Deps, lazyApp } from "./_deps.ts";
import { errorOptions, errorResponse, newRequestId, readJson, validate } from "./_http.ts";

const EvaluateBody = z.strictObject({
  task: TaskSchema,
  /** A unified diff against the base commit; empty when the agent changed nothing. */
  patch: z.string(),
});

/** The body whose task has a `harbor` key: a Harbor task folder. */
const HarborEvaluateBody = EvaluateBody.extend({ task: HarborRefSchema });

/** Whether a raw body's task names a Harbor task folder. */
function namesHarborTask(raw: unknown): boolean {
  const task = (raw as { task?: unknown } | null)?.task;
  return typeof task === "object" && task !== null && Object.hasOwn(task, "harbor");
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
    const task = "harbor" in body.task
      ? (await resolveHarborTask(body.task, {
        cacheDir: deps.evaluation.cacheDir,
        runsImages: deps.evaluation.backend.capabilities.runsImages,
      })).task
      : body.task;
    const signal = c.req.raw.signal;
    const request = { task, patch: body.patch, signal };
    const result = await deps.evalSlots.run(() => evaluate(deps.evaluation, request), signal);
    return c.json(result);
  });
  app.onError((error) => errorResponse(error, newRequestId(), errorOptions(deps)));
  return app;
}

export default lazyApp(createEvaluateApp);
