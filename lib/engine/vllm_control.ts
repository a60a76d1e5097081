/**
 * vLLM's RL controls across its workers (served in dev mode, `VLLM_SERVER_DEV_MODE=1`; vLLM's
 * `vllm/entrypoints/serve/dev/rlhf/api_router.py`; docs/engines.md): `POST /pause?mode=`
 * (`abort` ends running requests with their partial output, which the gateway resubmits; `wait`
 * lets them finish; `keep` freezes them with their KV), `POST /resume`, `POST
 * /update_weight_version {new_version}` and `GET /weight_info`.
 *
 * @module
 */
import type { PauseMode } from "./engine.ts";
import type { ControlCalls } from "./engine_control.ts";

/** The pause modes vLLM's `/pause` takes, its default first. */
export const VLLM_PAUSE_MODES: readonly PauseMode[] = ["abort", "wait", "keep"];

/**
 * vLLM's control calls: `POST /pause?mode=`, `POST /resume`, `POST /update_weight_version
 * {new_version}` (with `abortAll`, first `/abort_requests` with no ids, which aborts every running
 * request: the gateway resumes them under the new version), `GET /weight_info`.
 */
export const VLLM_CONTROL: ControlCalls = {
  pause: (mode) => ({ path: `/pause?mode=${encodeURIComponent(mode)}` }),
  continue: { path: "/resume" },
  setWeightVersion: (version, abortAll) => [
    ...(abortAll ? [{ path: "/abort_requests", body: { request_ids: [] } }] : []),
    { path: "/update_weight_version", body: { new_version: version } },
  ],
  versionPath: "/weight_info",
};
