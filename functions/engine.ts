/**
 * The trainer's engine controls (admin token), sent to every engine worker at once: pause and
 * continue generation around a weight update, and set or read the weight version later tokens
 * are recorded under. A turn a pause interrupts is not lost: an `abort` pause ends its engine
 * call and the gateway resubmits prompt + partial output, which SGLang holds until continue;
 * `retract` and `in_place` hold the call itself. Either way the agent's reply (and its stream)
 * goes on, and each token keeps the version that sampled it.
 *
 * Served alone with `deno serve -A functions/engine.ts`, or with the others by `serve.ts`.
 *
 * @module
 */
import { Hono } from "hono";
import { z } from "zod";
import type { PauseMode } from "../lib/engine/mod.ts";
import { admin } from "./_admin.ts";
import { type AdminDeps, type Deps, lazyApp } from "./_deps.ts";
import { errorOptions, errorResponse, newRequestId, readJson, validate } from "./_http.ts";

const VersionBody = z.strictObject({
  /** The name of the weights served from now on: an integer for `max_staleness` to compare. */
  version: z.string().min(1).max(128).regex(/^[\w.:-]+$/, "letters, digits, _ . : and -"),
  /** Also abort running requests (the gateway resumes them, under the new version). */
  abort_all_requests: z.boolean().default(false),
});

/** What the engine-control app uses. */
export type EngineDeps = AdminDeps & Pick<Deps, "control" | "dialect" | "engine">;

/** The engine-control app over `deps`. */
export function createEngineApp(deps: EngineDeps): Hono {
  const app = new Hono();
  const { control } = deps;
  // The dialect's own pause modes, its default first (SGLang: abort, retract, in_place; vLLM:
  // abort, wait, keep).
  const modes = deps.dialect.pauseModes as [PauseMode, ...PauseMode[]];
  const PauseBody = z.strictObject({ mode: z.enum(modes).default(modes[0]) });
  app.use("/engine/*", admin(deps));
  const body = async <T>(request: Request, schema: z.ZodType<T>) =>
    validate(schema, await readJson(request, deps.config, { empty: {} }));

  app.post("/engine/pause", async (c) => {
    const { mode } = await body(c.req.raw, PauseBody);
    return c.json({ mode, workers: await control.pause(mode) });
  });
  app.post("/engine/continue", async (c) => {
    await body(c.req.raw, z.strictObject({}));
    return c.json({ workers: await control.continue() });
  });
  app.get("/engine/weight_version", async (c) => {
    return c.json({ workers: await control.weightVersions() });
  });
  app.post("/engine/weight_version", async (c) => {
    const { version, abort_all_requests } = await body(c.req.raw, VersionBody);
    // The client first: requests resumed by the abort carry the new version's namespace (and,
    // where the engine names no versions, its label); taken back if the workers refuse the set.
    // Tokens the engine sent before are delivered first, so none of them takes the new label.
    await deps.engine.delivered?.();
    const previous = deps.engine.versionSet?.(version);
    try {
      return c.json({
        version,
        workers: await control.setWeightVersion(version, abort_all_requests),
      });
    } catch (error) {
      if (previous !== undefined) deps.engine.versionSet?.(previous);
      throw error;
    }
  });
  app.onError((error) => errorResponse(error, newRequestId(), errorOptions(deps)));
  return app;
}

export default lazyApp(createEngineApp);
