/**
 * The scripted engine's SGLang routes: `/generate`, engine sessions (`/open_session`,
 * `/close_session`), the RL controls (`/pause_generation`, `/continue_generation`, the weight
 * version calls) and `/abort_request`, as SGLang's HTTP server answers them (reference
 * sglang.md).
 *
 * @module
 */
import { generate, type GenerateContext } from "./_generate.ts";
import { PAUSE_MODES } from "./types.ts";

/** The answer to an SGLang route, or `null` for a path it does not serve. */
export async function sglangRoute(
  request: Request,
  path: string,
  engine: GenerateContext,
  abortRequests: string[],
): Promise<Response | null> {
  const { state } = engine;
  if (request.method === "POST" && path === "/generate") return await generate(request, engine);
  if (path === "/open_session" && (request.method === "POST" || request.method === "GET")) {
    const body = await request.json().catch(() => ({}));
    if (!engine.sessions.open(body?.session_id, body?.timeout)) {
      return Response.json({
        error: {
          message: "Failed to open the session. Check if a session with the same id is " +
            "still open.",
        },
      }, { status: 400 });
    }
    return Response.json(body.session_id);
  }
  if (request.method === "POST" && path === "/close_session") {
    const body = await request.json().catch(() => ({}));
    if (typeof body?.session_id === "string") engine.sessions.close(body.session_id);
    return new Response(null, { status: 200 });
  }
  if (request.method === "POST" && path === "/pause_generation") {
    const body = await request.json().catch(() => ({}));
    const mode = body?.mode ?? "abort";
    if (!PAUSE_MODES.includes(mode)) {
      return Response.json({ error: { message: `Invalid mode: ${mode}` } }, { status: 400 });
    }
    await state.pauseGeneration(mode);
    return Response.json({ message: "Generation paused successfully.", status: "ok" });
  }
  if (request.method === "POST" && path === "/continue_generation") {
    await request.body?.cancel();
    state.continueGeneration();
    return Response.json({ message: "Generation continued successfully.", status: "ok" });
  }
  if (request.method === "GET" && path === "/get_weight_version") {
    return Response.json({ weight_version: state.weightVersion });
  }
  if (
    request.method === "POST" &&
    (path === "/update_weights_from_disk" || path === "/update_weight_version")
  ) {
    const body = await request.json().catch(() => ({}));
    const version = path === "/update_weight_version" ? body?.new_version : body?.weight_version;
    const abortAll = body?.abort_all_requests ?? path === "/update_weight_version";
    await state.updateWeights(version, Boolean(abortAll));
    return Response.json(
      path === "/update_weight_version"
        ? { success: true, message: "ok", new_version: state.weightVersion }
        : {
          success: true,
          message: "Succeeded to update model weights.",
          num_paused_requests: 0,
        },
    );
  }
  if (request.method === "POST" && path === "/abort_request") {
    const body = await request.json().catch(() => ({}));
    const rids: string[] = body.abort_all
      ? [...state.running.keys()]
      : body.rid
      ? [String(body.rid)]
      : [];
    for (const rid of rids) {
      abortRequests.push(rid);
      state.running.get(rid)?.stop(); // unknown or finished rids are ignored, as SGLang does
    }
    return new Response(null, { status: 200 });
  }
  return null;
}
