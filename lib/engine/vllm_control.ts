/**
 * vLLM's RL controls across its workers (served in dev mode, `VLLM_SERVER_DEV_MODE=1`; vLLM's
 * `vllm/entrypoints/serve/dev/rlhf/api_router.py`; docs/engines.md): `POST /pause?mode=`
 * (`abort` ends running requests with their partial output, which the gateway resubmits; `wait`
 * lets them finish; `keep` freezes them with their KV), `POST /resume`, `POST
 * /update_weight_version {new_version}` and `GET /weight_info`.
 *
 * @module
 */
import {
  type EngineController,
  type EngineControlOptions,
  type PauseMode,
  type WorkerAnswer,
} from "./engine.ts";
import { EngineWorkers } from "./engine_control.ts";

/** The pause modes vLLM's `/pause` takes, its default first. */
export const VLLM_PAUSE_MODES: readonly PauseMode[] = ["abort", "wait", "keep"];

/** Pause, resume and weight versions across vLLM's workers. */
export class VllmControl implements EngineController {
  readonly #workers: EngineWorkers;

  constructor(readonly engineUrl: string, options: EngineControlOptions) {
    this.#workers = new EngineWorkers(engineUrl, options);
  }

  workers(): Promise<string[]> {
    return this.#workers.list();
  }

  /** `POST /pause?mode=` on every worker. */
  pause(mode: PauseMode): Promise<WorkerAnswer[]> {
    return this.#workers.fanOut("POST", `/pause?mode=${encodeURIComponent(mode)}`);
  }

  /** `POST /resume` on every worker. */
  continue(): Promise<WorkerAnswer[]> {
    return this.#workers.fanOut("POST", "/resume");
  }

  /**
   * `POST /update_weight_version` on every worker; `abortAll` first aborts every running request
   * (`/abort_requests` with no ids), which the gateway resumes under the new version.
   */
  async setWeightVersion(version: string, abortAll: boolean): Promise<WorkerAnswer[]> {
    if (abortAll) await this.#workers.fanOut("POST", "/abort_requests", { request_ids: [] });
    return await this.#workers.fanOut("POST", "/update_weight_version", { new_version: version });
  }

  /** Each worker's `GET /weight_info`. */
  weightVersions(): Promise<{ url: string; version: string }[]> {
    return this.#workers.versions("/weight_info");
  }
}
