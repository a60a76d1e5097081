/**
 * The vLLM dialect: the token-in/token-out `POST /inference/v1/generate` (`vllm_client.ts`) and
 * the dev-mode RL controls `/pause`, `/resume`, `/update_weight_version`, `/weight_info`
 * (`vllm_control.ts`).
 *
 * @module
 */
import type { EngineDialect } from "./engine.ts";
import { VllmClient } from "./vllm_client.ts";
import { EngineControl } from "./engine_control.ts";
import { VLLM_CONTROL, VLLM_PAUSE_MODES } from "./vllm_control.ts";

/** vLLM (`ENGINE_API=vllm`). */
export const VLLM: EngineDialect = {
  name: "vllm",
  title: "vLLM",
  sessions: false,
  // Its token-in endpoint takes images as processed `features`, which this gateway does not make.
  images: false,
  routedExperts: true,
  pauseModes: VLLM_PAUSE_MODES,
  connect: (url, options) => new VllmClient(url, options),
  control: (url, options) => new EngineControl(url, options, VLLM_CONTROL),
};
