/**
 * What the served model's own files beside the tokenizer say, read and checked at start-up when
 * a setting needs them: the MoE shape in `config.json` (`ROUTED_EXPERTS`), the image processor's
 * settings in `preprocessor_config.json` (`IMAGE_POLICY=vision`). A setting the model or the
 * engine's dialect cannot serve stops the gateway, naming the variable.
 *
 * @module
 */
import type { Config } from "../config/mod.ts";
import { type EngineDialect, type MoeShape, moeShape } from "../engine/mod.ts";
import { ConfigError } from "../errors/mod.ts";
import { checkImageTemplate, TemplateError } from "../template/mod.ts";
import type { ChatTokenizer } from "../tokenizer/mod.ts";
import { type ImageLimits, type VisionSettings, visionSettings } from "../vision/mod.ts";

/** How images reach a vision-language model: its processor's settings, its pad, the bounds. */
export interface ServedVision {
  readonly settings: VisionSettings;
  /** The token id the template renders an image part as (the family's one image pad). */
  readonly padId: number;
  readonly limits: ImageLimits & {
    /** Most images one request may hold, its history included. */
    readonly maxImages: number;
  };
}

/** `name` in the tokenizer folder `dir`. */
function besideTokenizer(dir: string, name: string): string {
  return `${dir.replace(/\/+$/, "")}/${name}`;
}

/** `preprocessor_config.json` in the tokenizer folder `dir`, when it is there. */
export async function imageProcessorOf(dir: string): Promise<string | null> {
  const file = besideTokenizer(dir, "preprocessor_config.json");
  try {
    return (await Deno.stat(file)).isFile ? file : null;
  } catch {
    return null;
  }
}

/**
 * The served model's MoE shape for `ROUTED_EXPERTS`, from `config.json` beside the tokenizer,
 * on a dialect whose engine returns routed experts.
 *
 * @throws {ConfigError} naming `ROUTED_EXPERTS` without the file, with a file that describes no
 * mixture of experts, or on a dialect that cannot return them.
 */
export async function loadMoe(
  config: Pick<Config, "tokenizerPath">,
  dialect: EngineDialect,
): Promise<MoeShape> {
  const refuse = (why: string) =>
    new ConfigError("ROUTED_EXPERTS", `Invalid ROUTED_EXPERTS: ${why}`);
  if (!dialect.routedExperts) {
    throw refuse(`the ${dialect.name} dialect's engine returns no routed experts`);
  }
  const file = besideTokenizer(config.tokenizerPath, "config.json");
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch {
    throw refuse(
      `no model config.json in TOKENIZER_PATH (${config.tokenizerPath}) to read the ` +
        "model's layers and experts from",
    );
  }
  try {
    return moeShape(JSON.parse(text));
  } catch (error) {
    throw refuse(`${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * What `IMAGE_POLICY=vision` needs: the processor's settings from `preprocessor_config.json`
 * beside the tokenizer, an engine dialect that sends images, and a template that renders an
 * image part as the family's one image pad.
 *
 * @throws {ConfigError} naming `IMAGE_POLICY`.
 */
export async function loadVision(
  config: Pick<
    Config,
    "tokenizerPath" | "maxImageBytes" | "maxImagePixels" | "maxImagesPerRequest"
  >,
  tokenizer: ChatTokenizer,
  dialect: EngineDialect,
): Promise<ServedVision> {
  const refuse = (why: string) =>
    new ConfigError("IMAGE_POLICY", `Invalid IMAGE_POLICY=vision: ${why}`);
  const file = besideTokenizer(config.tokenizerPath, "preprocessor_config.json");
  let settings: VisionSettings;
  try {
    settings = visionSettings(await Deno.readTextFile(file));
  } catch (error) {
    throw refuse(
      `cannot read the image processor's settings from "${file}" (${(error as Error).message})`,
    );
  }
  if (!dialect.images) {
    throw refuse(`the ${dialect.name} dialect does not send images to its engine`);
  }
  let padId: number;
  try {
    padId = checkImageTemplate(tokenizer);
  } catch (error) {
    if (!(error instanceof TemplateError)) throw error;
    throw refuse(error.message);
  }
  return {
    settings,
    padId,
    limits: {
      maxBytes: config.maxImageBytes,
      maxPixels: config.maxImagePixels,
      maxImages: config.maxImagesPerRequest,
    },
  };
}
