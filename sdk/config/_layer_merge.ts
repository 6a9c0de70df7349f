/**
 * Internal: applying configuration layers one over another while recording
 * where every value came from.
 *
 * Rules: objects merge deeply; arrays and scalars replace; `null` removes the
 * inherited value; an object whose `kind` differs from the inherited object's
 * `kind` replaces it (a `file` storage does not inherit fields of a `memory` one).
 * `undefined` (only possible in programmatic layers) means "not set".
 *
 * @module
 */

import { type ConfigPathSegment, formatConfigPath } from "./_config_path.ts";

interface Branch {
  readonly kind: "branch";
  origin: number;
  readonly children: Map<string, Tree>;
}
interface Leaf {
  readonly kind: "leaf";
  readonly origin: number;
  readonly value: unknown;
}
type Tree = Branch | Leaf;

/** The merged value, the origin of each leaf, and the last layer that wrote each path. */
export interface MergeResult {
  readonly value: Record<string, unknown>;
  /** Leaf path (formatted) → layer index. Leaves are scalars, arrays and empty objects. */
  readonly origins: ReadonlyMap<string, number>;
  /** Path (segments joined as JSON) → index of the last layer that set or removed it. */
  readonly touched: ReadonlyMap<string, number>;
}

/** Whether `value` is a plain object (JSON object), including null-prototype ones. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** The key of a path in {@linkcode MergeResult.touched}. */
export function pathKey(path: readonly ConfigPathSegment[]): string {
  return JSON.stringify(path);
}

/** Merges layers in the order they are applied. */
export class LayerMerger {
  readonly #root: Branch = { kind: "branch", origin: 0, children: new Map() };
  readonly #touched = new Map<string, number>();

  /** Apply layer number `origin` (an object) over everything applied before. */
  apply(origin: number, layer: Record<string, unknown>): void {
    this.#root.origin = origin;
    this.#mergeInto(this.#root, layer, origin, []);
  }

  #mergeInto(branch: Branch, layer: Record<string, unknown>, origin: number, path: ConfigPathSegment[]): void {
    for (const [key, value] of Object.entries(layer)) {
      if (value === undefined) continue;
      const childPath = [...path, key];
      const existing = branch.children.get(key);
      const merges = existing?.kind === "branch" && isPlainObject(value) && sameKind(existing, value);
      // What this layer drops (a removal, another kind, a leaf over an object) no longer tells who wrote a path
      // under it: an error there is this layer's, not that of the layer whose value was discarded.
      if (existing?.kind === "branch" && !merges) this.#forgetUnder(childPath);
      this.#touched.set(pathKey(childPath), origin);
      if (value === null) {
        branch.children.delete(key);
        continue;
      }
      if (merges) {
        existing.origin = origin;
        this.#mergeInto(existing, value as Record<string, unknown>, origin, childPath);
      } else if (isPlainObject(value)) {
        const fresh: Branch = { kind: "branch", origin, children: new Map() };
        branch.children.set(key, fresh);
        this.#mergeInto(fresh, value, origin, childPath);
      } else {
        branch.children.set(key, { kind: "leaf", origin, value: structuredClone(value) });
      }
    }
  }

  /** Forget who wrote the paths strictly under `path`. */
  #forgetUnder(path: readonly ConfigPathSegment[]): void {
    const key = pathKey(path);
    const prefix = `${key.slice(0, -1)},`; // `["a","b"]` → `["a","b",`
    for (const touched of this.#touched.keys()) if (touched.startsWith(prefix)) this.#touched.delete(touched);
  }

  /** The merged value and its origins. */
  result(): MergeResult {
    const origins = new Map<string, number>();
    const value = build(this.#root, [], origins) as Record<string, unknown>;
    return { value, origins, touched: this.#touched };
  }
}

function sameKind(existing: Branch, value: Record<string, unknown>): boolean {
  const incoming = value.kind;
  if (typeof incoming !== "string") return true;
  const current = existing.children.get("kind");
  return current === undefined || current.kind !== "leaf" || current.value === incoming;
}

function build(tree: Tree, path: ConfigPathSegment[], origins: Map<string, number>): unknown {
  if (tree.kind === "leaf") {
    origins.set(formatConfigPath(path), tree.origin);
    return structuredClone(tree.value);
  }
  const out: Record<string, unknown> = {};
  for (const [key, child] of tree.children) {
    // defineProperty, so that an adapter named "__proto__" stays a plain key.
    Object.defineProperty(out, key, {
      value: build(child, [...path, key], origins),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  if (tree.children.size === 0 && path.length > 0) origins.set(formatConfigPath(path), tree.origin);
  return out;
}
