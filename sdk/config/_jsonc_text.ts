/**
 * Internal: JSONC parsing (comments and trailing commas allowed) that keeps the
 * syntax tree, so that any configuration path can be traced back to a line and column.
 *
 * @module
 */

import { findNodeAtLocation, getNodeValue, type Node, type ParseError, parseTree, stripComments } from "jsonc-parser";
import type { ConfigPathSegment } from "./_config_path.ts";
import { configError } from "./_config_error.ts";

/** A 1-based line and column (columns count UTF-16 code units). */
export interface TextPosition {
  readonly line: number;
  readonly column: number;
}

// jsonc-parser's ParseErrorCode is a const enum; its values are stable.
const SYNTAX_PROBLEMS: Record<number, string> = {
  1: "unexpected symbol",
  2: "invalid number",
  3: "expected a property name",
  4: "expected a value",
  5: "expected a colon",
  6: "expected a comma",
  7: "expected a closing brace",
  8: "expected a closing bracket",
  9: "expected the end of the file",
  10: "invalid comment",
  11: "unterminated comment",
  12: "unterminated string",
  13: "unterminated number",
  14: "invalid unicode escape",
  15: "invalid escape character",
  16: "invalid character in string",
};

/** A parsed JSONC text: its value and what is needed to locate paths in it. */
export class JsoncText {
  readonly #text: string;
  readonly #root: Node | undefined;
  #lineStarts: number[] | undefined;
  /** The parsed value; `{}` for a text holding only whitespace and comments. */
  readonly value: unknown;

  private constructor(text: string, root: Node | undefined, value: unknown) {
    this.#text = text;
    this.#root = root;
    this.value = value;
  }

  /**
   * Parse `text`, named `file` in errors.
   *
   * @throws {HarnessError} `CONFIG_SYNTAX` naming the file, line and column of the first problem.
   */
  static parse(text: string, file: string): JsoncText {
    const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
    if (stripComments(body).trim() === "") return new JsoncText(body, undefined, {});
    const deep = tooDeep(body);
    if (deep !== undefined) {
      throw configError("CONFIG_SYNTAX", "Cannot parse the configuration", {
        file,
        position: new JsoncText(body, undefined, undefined).positionAt(deep),
      }, `values nest deeper than ${MAX_DEPTH} levels`);
    }
    const errors: ParseError[] = [];
    const root = parseTree(body, errors, { allowTrailingComma: true, disallowComments: false });
    const doc = new JsoncText(body, root, root === undefined ? undefined : getNodeValue(root));
    if (errors.length > 0 || root === undefined) {
      const first = errors[0];
      const offset = first?.offset ?? 0;
      const problem = first === undefined ? "expected a value" : SYNTAX_PROBLEMS[first.error] ?? "invalid JSONC";
      throw configError("CONFIG_SYNTAX", "Cannot parse the configuration", {
        file,
        position: doc.positionAt(offset),
      }, problem);
    }
    return doc;
  }

  /** The line and column of a character offset. */
  positionAt(offset: number): TextPosition {
    const starts = this.#lineStarts ??= lineStarts(this.#text);
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (starts[mid] <= offset) low = mid;
      else high = mid - 1;
    }
    return { line: low + 1, column: offset - starts[low] + 1 };
  }

  /**
   * The position of the value at `path`, or of its deepest ancestor present in
   * the text. With `key`, the position of that property's name inside the
   * object at `path` (for unknown keys).
   */
  locate(path: readonly ConfigPathSegment[], key?: string): TextPosition | undefined {
    if (this.#root === undefined) return undefined;
    for (let length = path.length; length >= 0; length--) {
      const node = findNodeAtLocation(this.#root, path.slice(0, length));
      if (node === undefined) continue;
      if (key !== undefined && length === path.length && node.type === "object") {
        const property = node.children?.find((p) => p.children?.[0]?.value === key);
        if (property?.children?.[0] !== undefined) return this.positionAt(property.children[0].offset);
      }
      return this.positionAt(node.offset);
    }
    return this.positionAt(this.#root.offset);
  }
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) starts.push(i + 1);
    else if (c === 13) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    }
  }
  return starts;
}

/** How deep objects and arrays may nest in a configuration (the parser and every later walk recurse). */
const MAX_DEPTH = 256;

/** The offset of the first bracket past {@linkcode MAX_DEPTH}, outside strings and comments; else `undefined`. */
function tooDeep(text: string): number | undefined {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) { // a string: skip to its closing quote
      for (i++; i < text.length && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2f) { // a line comment
      while (i < text.length && text.charCodeAt(i) !== 0x0a) i++;
    } else if (c === 0x2f && text.charCodeAt(i + 1) === 0x2a) { // a block comment
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 1;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_DEPTH) return i;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return undefined;
}
