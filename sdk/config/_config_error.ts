/**
 * Internal: configuration errors that name the file, line and column.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { TextPosition } from "./_jsonc_text.ts";

/** Where a configuration problem is: the layer (file path, `default`, `overrides`) and, with text, the position. */
export interface ConfigLocation {
  readonly file: string;
  readonly position?: TextPosition;
  /** The configuration path, written with `formatConfigPath`. */
  readonly path?: string;
}

/** `file:line:column`, or the file alone when there is no text to point into. */
export function formatLocation(location: ConfigLocation): string {
  const { file, position } = location;
  return position === undefined ? file : `${file}:${position.line}:${position.column}`;
}

/**
 * Build a `HarnessError` whose message reads `<fact> in <file:line:column>: <detail>`
 * and whose details carry `file`, `line`, `column` (1-based) and `path`.
 */
export function configError(
  code: string,
  fact: string,
  location: ConfigLocation,
  detail: string,
  extra: Record<string, unknown> = {},
  cause?: unknown,
): HarnessError {
  const details: Record<string, unknown> = { file: location.file };
  if (location.position !== undefined) {
    details.line = location.position.line;
    details.column = location.position.column;
  }
  if (location.path !== undefined) details.path = location.path;
  const message = `${fact} in ${formatLocation(location)}${detail === "" ? "" : `: ${detail}`}`;
  return new HarnessError(code, message, { cause, details: { ...details, ...extra } });
}
