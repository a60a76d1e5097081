/**
 * The scripted engine: a stand-in for SGLang that speaks its wire protocol with scripted replies.
 * It is not a model. It serves `deno task serve` when no `ENGINE_URL` is set, so the gateway runs
 * on a machine without a GPU, and the tests and the bench drive every engine behaviour through it.
 *
 * @module
 */
export {
  DEFAULT_REPLY,
  type EngineCall,
  type Fault,
  type Reply,
  type Script,
  type ScriptedImage,
  type Spelling,
} from "./script.ts";
export { scriptedLogprob, scriptedTopLogprobs } from "./logprobs.ts";
export type { PauseMode, ScriptedEngine, ScriptedEngineOptions } from "./types.ts";
export { startScriptedEngine } from "./scripted_engine.ts";
export { type ScriptedFleet, startScriptedFleet } from "./fleet.ts";
