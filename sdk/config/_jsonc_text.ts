/**
 * Internal: JSONC parsing (comments and trailing commas allowed) that keeps the
 * syntax tree, so that any configuration path can be traced back to a line and column.
 *
 * @module
 */

import { createScanner, getNodeValue, type Node, type ParseError, parseTree } from "jsonc-parser";
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
    const { deep, empty, separator } = scan(body);
    if (separator !== undefined) {
      throw configError(
        "CONFIG_SYNTAX",
        "Cannot parse the configuration",
        {
          file,
          position: new JsoncText(body, undefined, undefined).positionAt(separator),
        },
        "a line separator (U+2028 or U+2029) inside a // comment: JSONC ends the comment only at a line break, so what follows it on the line would be ignored",
      );
    }
    if (empty) return new JsoncText(body, undefined, {});
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
      const node = nodeAt(this.#root, path.slice(0, length));
      if (node === undefined) continue;
      if (key !== undefined && length === path.length && node.type === "object") {
        const property = lastProperty(node, key);
        if (property?.children?.[0] !== undefined) return this.positionAt(property.children[0].offset);
      }
      return this.positionAt(node.offset);
    }
    return this.positionAt(this.#root.offset);
  }
}

// A repeated key's value is its last one (as in the parsed value), so that is the one located.
function lastProperty(object: Node, key: string): Node | undefined {
  const children = object.children ?? [];
  for (let i = children.length - 1; i >= 0; i--) if (children[i].children?.[0]?.value === key) return children[i];
  return undefined;
}

/** The node at `path`, following the last of repeated keys (jsonc-parser's findNodeAtLocation takes the first). */
function nodeAt(root: Node, path: readonly ConfigPathSegment[]): Node | undefined {
  let node: Node | undefined = root;
  for (const segment of path) {
    if (node === undefined) return undefined;
    if (typeof segment === "string" && node.type === "object") node = lastProperty(node, segment)?.children?.[1];
    else if (typeof segment === "number" && node.type === "array") node = node.children?.[segment];
    else return undefined;
  }
  return node;
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
export const MAX_DEPTH = 256;

// jsonc-parser's SyntaxKind and ScanError are const enums; their values are stable.
const OPEN_BRACE = 1, CLOSE_BRACE = 2, OPEN_BRACKET = 3, CLOSE_BRACKET = 4;
const LINE_COMMENT = 12, BLOCK_COMMENT = 13, LINE_BREAK = 14, TRIVIA = 15, EOF = 17;
const NO_SCAN_ERROR = 0;

/**
 * One pass of jsonc-parser's own scanner (so strings, comments and line breaks end where the parser's end):
 * the offset of the first bracket past {@linkcode MAX_DEPTH}, whether the text holds only whitespace and
 * well-formed comments (an unterminated comment is not empty: the parser reports it), and the offset of a
 * U+2028 or U+2029 inside a line comment (JavaScript ends the comment there, JSONC does not: a reader of the file
 * would take what follows for configuration that the parser ignores).
 */
function scan(text: string): { deep: number | undefined; empty: boolean; separator?: number } {
  const scanner = createScanner(text, false);
  let depth = 0;
  let empty = true;
  for (let kind = scanner.scan(); kind !== EOF; kind = scanner.scan()) {
    if (kind === OPEN_BRACE || kind === OPEN_BRACKET) {
      if (++depth > MAX_DEPTH) return { deep: scanner.getTokenOffset(), empty: false };
    } else if (kind === CLOSE_BRACE || kind === CLOSE_BRACKET) depth--;
    else if (kind === LINE_COMMENT) {
      const start = scanner.getTokenOffset();
      const at = text.slice(start, start + scanner.getTokenLength()).search(/[\u2028\u2029]/);
      if (at >= 0) return { deep: undefined, empty: false, separator: start + at };
    }
    const trivia = kind === LINE_COMMENT || kind === BLOCK_COMMENT || kind === LINE_BREAK || kind === TRIVIA;
    if (!trivia || scanner.getTokenError() !== NO_SCAN_ERROR) empty = false;
  }
  return { deep: undefined, empty };
}

/**
 * The path of the first object or array of a programmatic `value` past {@linkcode MAX_DEPTH} (a cycle is one),
 * else `undefined`: later walks (the inline-secret scan, the layer merge, the schema) recurse.
 */
export function tooDeepValue(value: unknown, path: ConfigPathSegment[] = []): ConfigPathSegment[] | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  if (path.length >= MAX_DEPTH) return path;
  const entries: [ConfigPathSegment, unknown][] = Array.isArray(value) ? [...value.entries()] : Object.entries(value);
  for (const [key, child] of entries) {
    const found = tooDeepValue(child, [...path, key]);
    if (found !== undefined) return found;
  }
  return undefined;
}
