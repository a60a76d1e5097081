/**
 * `GET /tasks?dir=<absolute folder>` (admin token): the Harbor task folders directly under a
 * folder of the gateway's machine, each with what its `task.toml` says (name, description,
 * difficulty, category, tags, agent and verifier timeouts, image, work dir) or, for a folder
 * that does not load, why not. At most `MAX_TASKS_LISTED`, by name.
 *
 * Served alone with `deno serve -A functions/tasks.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { z } from "zod";
import { listHarborTasks } from "../lib/evaluate/mod.ts";
import { admin } from "./_admin.ts";
import { type AdminDeps, lazyApp } from "./_deps.ts";
import { errorOptions, errorResponse, newRequestId, validate } from "./_http.ts";
import { taskListJson } from "./_views.ts";

const TasksQuery = z.strictObject({
  /** The folder holding task folders. */
  dir: z.string().max(4096).regex(/^\//, "expected an absolute path").refine(
    (path) => !path.split("/").some((part) => part === "." || part === ".."),
    "expected a path without . or .. parts",
  ),
});

/** The tasks app over `deps`. */
export function createTasksApp(deps: AdminDeps): Hono {
  const app = new Hono();
  app.use("/tasks", admin(deps));
  app.get("/tasks", async (c) => {
    const { dir } = validate(TasksQuery, c.req.query());
    return c.json(taskListJson(await listHarborTasks(dir)));
  });
  app.onError((error) => errorResponse(error, newRequestId(), errorOptions(deps)));
  return app;
}

export default lazyApp(createTasksApp);
