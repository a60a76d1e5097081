/**
 * Every registered model family is consistent with a real template of its own: the template is
 * detected as that family, the texts its turns end with and its role markers are single tokens of
 * the family's tokenizer (the xtuner export cuts messages at them), and no tool-call parser name
 * belongs to two families. A new family is not served until a template of it is listed here.
 */
import assert from "node:assert/strict";
import {
  DEEPSEEK,
  detectFormats,
  FAMILIES,
  familyOf,
  GLM,
  GPT_OSS,
  KIMI_K2,
  type ModelFamily,
  modelFamily,
  QWEN,
  QWEN3_CODER,
  TOOL_CALL_PARSERS,
} from "../../lib/output/mod.ts";
import { withFormats } from "../../lib/tokenizer/mod.ts";
import { type Family, familyTokenizer } from "../_families.ts";
import { qwen3 } from "../_gateway.ts";

/** A template of each family: the fixtures', and Qwen3's own. */
const TEMPLATES: readonly { template: Family | "qwen3"; family: ModelFamily; parser: string }[] = [
  { template: "qwen3", family: QWEN, parser: "qwen25" },
  { template: "qwen3_coder", family: QWEN3_CODER, parser: "qwen3_coder" },
  { template: "deepseek_v31", family: DEEPSEEK, parser: "deepseekv31" },
  { template: "gpt_oss", family: GPT_OSS, parser: "gpt-oss" },
  { template: "glm45", family: GLM, parser: "glm45" },
  { template: "glm47", family: GLM, parser: "glm47" },
  { template: "kimi_k2", family: KIMI_K2, parser: "kimi_k2" },
];

Deno.test("each tool-call parser belongs to one family, and the families serve exactly TOOL_CALL_PARSERS", () => {
  const names = FAMILIES.flatMap((family) => family.toolCallParsers);
  assert.equal(new Set(names).size, names.length);
  assert.deepEqual(new Set(names), TOOL_CALL_PARSERS);
  for (const family of FAMILIES) {
    for (const name of family.toolCallParsers) assert.equal(familyOf(name), family);
  }
  assert.equal(familyOf("mistral"), null);
});

Deno.test("every family has a template of its own listed here", () => {
  const covered = new Set(TEMPLATES.map(({ family }) => family));
  assert.deepEqual(FAMILIES.filter((family) => !covered.has(family)).map((f) => f.name), []);
});

for (const { template, family, parser } of TEMPLATES) {
  Deno.test(`${template}'s template is ${family.name}'s; its turn ends and role markers are tokens of its tokenizer`, async () => {
    const tokenizer = template === "qwen3" ? await qwen3() : await familyTokenizer(template);
    const detected = detectFormats(tokenizer.chatTemplate);
    assert.equal(detected.toolCallParser, parser);
    const served = modelFamily({
      toolCallParser: parser,
      reasoningParser: detected.reasoningParser,
    });
    assert.equal(served, family);
    // Throws when a text the family ends turns with is not one token.
    withFormats(tokenizer, { toolCallParser: parser, reasoningParser: detected.reasoningParser });
    for (const opener of served.roles.openers) {
      assert.equal(tokenizer.encode(opener).length, 1, `${opener} in ${template}`);
    }
  });
}
