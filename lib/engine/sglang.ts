/**
 * The SGLang dialect: `POST /generate` with token ids in and out (`sglang_client.ts`), and the
 * workers' `/pause_generation`, `/continue_generation` and weight-version endpoints
 * (`engine_control.ts`).
 *
 * @module
 */
import type { EngineDialect } from "./engine.ts";
import { EngineControl } from "./engine_control.ts";
import { SglangClient } from "./sglang_client.ts";

/** SGLang (`ENGINE_API=sglang`, the default). */
export const SGLANG: EngineDialect = {
  name: "sglang",
  title: "SGLang",
  sessions: true,
  images: true,
  routedExperts: true,
  pauseModes: ["abort", "retract", "in_place"],
  connect: (url, options) => new SglangClient(url, options),
  control: (url, options) => new EngineControl(url, options),
};
