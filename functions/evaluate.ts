/**
 * `POST /evaluate` (admin token): grades a patch for a task in a fresh sandbox and answers with
 * the reward and its evidence. At most `EVAL_CONCURRENCY` evaluations run at once per process;
 * the rest wait. A caller that leaves takes its evaluation down with it: the sandbox is killed.
 *
 * Served alone with `deno serve -A functions/evaluate.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { z } from "zod";
import { evaluate, TaskSchema } from "../lib/evaluate/mod.ts";
import { admin } from "./_admin.ts";
import { type Deps, lazyApp } from "./_deps.ts";
import { errorResponse, newRequestId, readJson, validate } from "./_http.ts";

const EvaluateBody = z.object({
  task: TaskSchema,
  /** A unified diff against the base commit; empty when the agent changed nothing. */
  patch: z.string(),
});

/** The evaluate app over `deps`. */
export function createEvaluateApp(deps: Deps): Hono {
  const app = new Hono();
  app.use("/evaluate", admin(deps));
  app.post("/evaluate", async (c) => {
    const body = validate(EvaluateBody, await readJson(c.req.raw, deps.config.maxBodyBytes));
    const signal = c.req.raw.signal;
    const request = { task: body.task, patch: body.patch, signal };
    const result = await deps.evalSlots.run(() => evaluate(deps.evaluation, request), signal);
    return c.json(result);
  });
  app.onError((error) => errorResponse(error, newRequestId(), deps.config));
  return app;
}

export default lazyApp(createEvaluateApp);
