/**
 * `memoryFs()`: the file-system seam in memory, for tests and serverless runs.
 *
 * @module
 */

import { HarnessError } from "../../kernel/harness_error.ts";
import { globMatcher } from "./_glob.ts";
import {
  editableText,
  endsWithSlash,
  fsError,
  isDirectory,
  notDirectory,
  notFound,
  replaceExact,
  segmentsOf,
  selectLines,
  slashed,
} from "./_fs_errors.ts";
import type { FsEntry, FsService, FsStat } from "./fs_service.ts";

type Node = { kind: "file"; data: Uint8Array; mtimeMs: number } | {
  kind: "directory";
  children: Map<string, Node>;
  mtimeMs: number;
};
type Dir = Extract<Node, { kind: "directory" }>;

/** Options of {@linkcode memoryFs}. */
export interface MemoryFsOptions {
  /** Files to start with, by path; parent directories are created. */
  readonly files?: Readonly<Record<string, string | Uint8Array>>;
  /** The clock of modification times. @default {Date.now} */
  readonly now?: () => number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * An {@linkcode FsService} held in memory: a tree of directories and files
 * under a virtual root `/`. It has no symbolic links or devices; everything
 * else behaves as `localFs` does (the same contract suite runs on both).
 * Each operation runs whole in one step, so parallel edits of one file all
 * land, one after the other.
 *
 * @param options Initial files and the clock.
 * @returns The service.
 *
 * @example Editing a file in memory
 * ```ts
 * import { memoryFs } from "@dsh/harness/tools";
 * import assert from "node:assert/strict";
 *
 * const fs = memoryFs({ files: { "src/a.ts": "let x = 1;\n" } });
 * await fs.edit("src/a.ts", "x = 1", "x = 2");
 * assert.equal((await fs.readText("src/a.ts")).text, "let x = 2;\n");
 * assert.deepEqual(await fs.glob("**\/*.ts"), ["src/a.ts"]);
 * ```
 */
export function memoryFs(options: MemoryFsOptions = {}): FsService {
  const now = options.now ?? Date.now;
  const root: Dir = { kind: "directory", children: new Map(), mtimeMs: now() };

  const walk = (path: string, segments: string[]): Node => {
    let node: Node = root;
    for (const [i, name] of segments.entries()) {
      if (node.kind !== "directory") throw notDirectory(segments.slice(0, i).join("/"));
      const next: Node | undefined = node.children.get(name);
      if (next === undefined) throw notFound(path);
      node = next;
    }
    return node;
  };
  const parentOf = (path: string, segments: string[], create: boolean): Dir => {
    let node: Node = root;
    for (const name of segments.slice(0, -1)) {
      if (node.kind !== "directory") throw notDirectory(path);
      let next: Node | undefined = node.children.get(name);
      if (next === undefined) {
        if (!create) throw notFound(path);
        next = { kind: "directory", children: new Map(), mtimeMs: now() };
        node.children.set(name, next);
      }
      node = next;
    }
    if (node.kind !== "directory") throw notDirectory(path);
    return node;
  };
  const file = (path: string): Extract<Node, { kind: "file" }> => {
    const node = walk(path, segmentsOf(path, "/"));
    if (node.kind === "directory") throw isDirectory(path);
    if (endsWithSlash(path)) throw slashed(path);
    return node;
  };
  const write = (path: string, data: string | Uint8Array, createParents: boolean) => {
    const segments = segmentsOf(path, "/");
    if (segments.length === 0) throw isDirectory(path);
    if (endsWithSlash(path)) {
      const existing = (() => {
        try {
          return walk(path, segments);
        } catch {
          return undefined;
        }
      })();
      throw existing?.kind === "directory" ? isDirectory(path) : slashed(path);
    }
    const parent = parentOf(path, segments, createParents);
    const name = segments[segments.length - 1];
    if (parent.children.get(name)?.kind === "directory") throw isDirectory(path);
    const bytes = typeof data === "string" ? encoder.encode(data) : data.slice();
    parent.children.set(name, { kind: "file", data: bytes, mtimeMs: now() });
  };

  for (const [path, data] of Object.entries(options.files ?? {})) write(path, data, true);

  const service: FsService = {
    readBytes: (path) => Promise.resolve().then(() => file(path).data.slice()),
    readText: (path, read = {}) =>
      Promise.resolve().then(() => selectLines(decoder.decode(file(path).data), read.startLine, read.lineCount)),
    writeFile: (path, data, write_ = {}) =>
      Promise.resolve().then(() => write(path, data, write_.createParents ?? true)),
    edit: (path, oldText, newText, edit = {}) =>
      Promise.resolve().then(() => {
        const node = file(path);
        const { text, count } = replaceExact(
          path,
          editableText(path, node.data),
          oldText,
          newText,
          edit.replaceAll ?? false,
        );
        node.data = encoder.encode(text);
        node.mtimeMs = now();
        return count;
      }),
    list: (path) =>
      Promise.resolve().then(() => {
        const node = walk(path, segmentsOf(path, "/"));
        if (node.kind !== "directory") throw notDirectory(path);
        return [...node.children.entries()]
          .map(([name, child]): FsEntry => ({ name, kind: child.kind }))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      }),
    glob: (pattern, glob = {}) =>
      Promise.resolve().then(() => {
        const base = segmentsOf(glob.cwd ?? ".", "/");
        const start = walk(glob.cwd ?? ".", base);
        if (start.kind !== "directory") throw notDirectory(glob.cwd ?? ".");
        const matcher = globMatcher(pattern);
        const limit = glob.limit ?? 1000;
        const out: string[] = [];
        const visit = (dir: Dir, rel: string) => {
          for (const [name, child] of dir.children) {
            const path = rel === "" ? name : `${rel}/${name}`;
            if (child.kind === "directory") visit(child, path);
            else if (matcher(path)) out.push(path);
          }
        };
        visit(start, "");
        const prefix = base.join("/");
        return out.sort().slice(0, limit).map((p) => (prefix === "" ? p : `${prefix}/${p}`));
      }),
    stat: (path) =>
      Promise.resolve().then((): FsStat => {
        const node = walk(path, segmentsOf(path, "/"));
        return node.kind === "file"
          ? { kind: "file", size: node.data.length, mtimeMs: node.mtimeMs }
          : { kind: "directory", size: 0, mtimeMs: node.mtimeMs };
      }),
    mkdir: (path, mkdir = {}) =>
      Promise.resolve().then(() => {
        const segments = segmentsOf(path, "/");
        if (segments.length === 0) {
          if (mkdir.recursive) return;
          throw fsError("FILE_EXISTS", `Path "${path}" already exists`, path);
        }
        const parent = parentOf(path, segments, mkdir.recursive ?? false);
        const name = segments[segments.length - 1];
        const existing = parent.children.get(name);
        if (existing !== undefined) {
          if (mkdir.recursive && existing.kind === "directory") return;
          throw fsError("FILE_EXISTS", `Path "${path}" already exists`, path);
        }
        parent.children.set(name, { kind: "directory", children: new Map(), mtimeMs: now() });
      }),
    remove: (path, remove = {}) =>
      Promise.resolve().then(() => {
        const segments = segmentsOf(path, "/");
        if (segments.length === 0) throw new HarnessError("INVALID_PATH", "Cannot remove the root");
        const parent = parentOf(path, segments, false);
        const name = segments[segments.length - 1];
        const node = parent.children.get(name);
        if (node === undefined) throw notFound(path);
        if (node.kind === "directory" && node.children.size > 0 && !remove.recursive) {
          throw fsError("DIRECTORY_NOT_EMPTY", `Directory "${path}" is not empty`, path);
        }
        parent.children.delete(name);
      }),
  };
  return service;
}
