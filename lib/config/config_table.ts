/**
 * The documentation's table of variables, rendered from the configuration schema.
 *
 * @module
 */
import { CONFIG_DECLARATIONS } from "./config_schema.ts";

/** The comment lines around the generated table in docs/configuration.md. */
export const CONFIG_TABLE_MARKERS = {
  start: "<!-- config-table -->",
  end: "<!-- /config-table -->",
} as const;

/**
 * The markdown table of every variable (its default and meaning) in declaration order, padded
 * as `deno fmt` pads it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configTable } from "./config_table.ts";
 * const [header, , port] = configTable().split("\n");
 * assert.match(header, /^\| variable +\| default +\| meaning +\|$/);
 * assert.match(port, /^\| `PORT` +\| `8080` +\| TCP port \(`0` picks a free one\) +\|$/);
 * ```
 */
export function configTable(): string {
  const rows = [
    ["variable", "default", "meaning"],
    ...CONFIG_DECLARATIONS.map(({ name, shown, meaning }) => [`\`${name}\``, shown, meaning]),
  ].map((row) => row.map((cell) => cell.replaceAll("|", "\\|")));
  const widths = rows[0].map((_, column) => Math.max(3, ...rows.map((row) => width(row[column]))));
  const line = (cells: readonly string[]) =>
    `| ${
      cells.map((cell, column) => cell.padEnd(cell.length + widths[column] - width(cell))).join(
        " | ",
      )
    } |`;
  const rule = widths.map((columnWidth) => "-".repeat(columnWidth));
  return [line(rows[0]), line(rule), ...rows.slice(1).map(line)].join("\n") + "\n";
}

/**
 * `markdown` with the text between {@linkcode CONFIG_TABLE_MARKERS} replaced by
 * {@linkcode configTable}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { configTable, withConfigTable } from "./config_table.ts";
 * const page = "# Configuration\n\n<!-- config-table -->\nold\n<!-- /config-table -->\n";
 * assert.equal(
 *   withConfigTable(page),
 *   `# Configuration\n\n<!-- config-table -->\n\n${configTable()}\n<!-- /config-table -->\n`,
 * );
 * ```
 * @throws {RangeError} when the markers are missing or out of order.
 */
export function withConfigTable(markdown: string): string {
  const { start, end } = CONFIG_TABLE_MARKERS;
  const from = markdown.indexOf(start);
  const to = markdown.indexOf(end);
  if (from < 0 || to < from) {
    throw new RangeError(`Cannot place the configuration table: "${start}" … "${end}" is missing`);
  }
  return `${markdown.slice(0, from + start.length)}\n\n${configTable()}\n${markdown.slice(to)}`;
}

/** Columns a cell takes: one per character (the table holds no wide characters). */
function width(cell: string): number {
  return [...cell].length;
}
