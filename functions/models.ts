/**
 * `GET /v1/models` and `GET /v1/models/{id}`: the served model, in one shape both SDKs read
 * (Anthropic's `data`/`has_more`/`display_name`/`max_input_tokens` and OpenAI's
 * `object`/`created`/`owned_by`). Requests may name any model: one engine serves them all.
 * Answers a session token or the admin token.
 *
 * @module
 */
import { Hono } from "hono";
import { openaiErrorEnvelope } from "../lib/openai/mod.ts";
import { resolveToken } from "../lib/session/mod.ts";
import { sameSecret } from "../lib/timing/mod.ts";
import { type AdminDeps, type Deps, lazyApp } from "./_deps.ts";
import {
  credential,
  envelopedResponse,
  errorOptions,
  errorResponse,
  newRequestId,
} from "./_http.ts";

/** What the models app uses. */
export type ModelsDeps = AdminDeps & Pick<Deps, "contextLength">;

/** The models app over `deps`. */
export function createModelsApp(deps: ModelsDeps): Hono {
  const app = new Hono();
  const errors = errorOptions(deps);

  const model = (id: string) => ({
    id,
    object: "model",
    created: 0,
    owned_by: "rollout-gateway",
    type: "model",
    display_name: id,
    created_at: new Date(0).toISOString(),
    max_input_tokens: deps.contextLength,
    max_tokens: deps.contextLength,
  });

  /** `null` when the caller may list models, else the error response in its client's shape. */
  const refused = async (raw: Request, requestId: string): Promise<Response | null> => {
    try {
      const token = credential(raw);
      if (token !== null && sameSecret(token, deps.adminToken)) return null;
      await resolveToken(deps.kv, token, { devOpenSessions: deps.config.devOpenSessions });
      return null;
    } catch (error) {
      // Anthropic's clients name their API version; OpenAI's do not.
      return raw.headers.has("anthropic-version")
        ? errorResponse(error, requestId, errors)
        : envelopedResponse(error, requestId, errors, openaiErrorEnvelope);
    }
  };

  app.get("/v1/models", async (c) => {
    const requestId = newRequestId();
    const refusal = await refused(c.req.raw, requestId);
    if (refusal) return refusal;
    const served = model(deps.config.modelId);
    return c.json(
      {
        object: "list",
        data: [served],
        has_more: false,
        first_id: served.id,
        last_id: served.id,
      },
      200,
      { "request-id": requestId },
    );
  });

  app.get("/v1/models/:id{.+}", async (c) => {
    const requestId = newRequestId();
    const refusal = await refused(c.req.raw, requestId);
    if (refusal) return refusal;
    return c.json(model(c.req.param("id")), 200, { "request-id": requestId });
  });

  return app;
}

export default lazyApp(createModelsApp);
