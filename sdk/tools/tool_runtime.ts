/**
 * `ToolRuntime` (`ctx.tools`): the scope-aware tool registry and the entry to
 * the guarded execution pipeline.
 *
 * @module
 */

import type { ScopeInfo } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { ToolSchema } from "../llm/messages.ts";
import type { RegistrationOwner, ServiceHost } from "../prompt/registration_owner.ts";
import { deepFreeze } from "./_json.ts";
import { announce, appliesTo } from "../prompt/_scoped_dispatch.ts";
import { executeToolCall, type PipelineDeps } from "./_tool_pipeline.ts";
import { validateToolShape } from "./_validate_definition.ts";
import type { ApprovalService } from "./approval_service.ts";
import type { AnyToolDefinition, ToolExecution } from "./tool_definition.ts";
import type { ToolExecutionInput, ToolExecutionResult } from "./tool_execution_result.ts";

/**
 * A live filter over the tools a scope inherits (the global layer and its
 * ancestors' tools). Several restrictions on one scope intersect; the scope's
 * own registrations are never affected.
 */
export interface ToolRestriction {
  /** Inherited tool names that stay visible; every other inherited tool is hidden. */
  readonly allow?: readonly string[];
  /** Inherited tool names that are hidden. */
  readonly deny?: readonly string[];
}

/**
 * A monotonic guard, evaluated after every `tools/pre-execute` listener and
 * before the body. Returning a reason denies the call; returning `undefined`
 * leaves the decision alone. It has no way to allow, so no listener order can
 * turn a denial back into permission. A guard that throws denies.
 */
export type ToolGuard = (exec: ToolExecution) => string | undefined | void | Promise<string | undefined | void>;

/**
 * A check of one subject a call reaches beyond its own (a file a search reads,
 * the target of a link): a string denies it, with that reason. Synchronous: a
 * search asks it for every file.
 */
export type ToolSubjectGuard = (exec: ToolExecution, subject: string) => string | undefined | void;

/** How a call is scheduled: `parallel` may overlap siblings, `exclusive` runs alone as a barrier. */
export type ToolExecutionMode = "parallel" | "exclusive";

/** Options of {@linkcode ToolRuntime}. */
export interface ToolRuntimeOptions {
  /**
   * The approval service that answers `ask` decisions.
   *
   * @default {the `approvals` service of the host context, if any; else every ask is denied}
   */
  approvals?: ApprovalService;
  /**
   * Generates the ids of result messages.
   *
   * @default {() => crypto.randomUUID()}
   */
  newId?: () => string;
}

interface CompiledRestriction {
  readonly allow: ReadonlySet<string> | undefined;
  readonly deny: ReadonlySet<string> | undefined;
}

interface GuardEntry {
  readonly guard: ToolGuard;
  readonly scope: ScopeInfo | undefined;
}

interface SubjectGuardEntry {
  readonly guard: ToolSubjectGuard;
  readonly scope: ScopeInfo | undefined;
}

function compileRestriction(filter: ToolRestriction): CompiledRestriction {
  const names = (list: readonly string[] | undefined, field: string) => {
    if (list === undefined) return undefined;
    if (!Array.isArray(list) || list.some((n) => typeof n !== "string")) {
      throw new HarnessError("INVALID_ARGS", `Cannot restrict tools: ${field} must be an array of names`);
    }
    return new Set(list);
  };
  const compiled: CompiledRestriction = { allow: names(filter?.allow, "allow"), deny: names(filter?.deny, "deny") };
  if (compiled.allow === undefined && compiled.deny === undefined) {
    throw new HarnessError("INVALID_ARGS", "Cannot restrict tools with a filter that has neither allow nor deny");
  }
  return compiled;
}

function passes(restrictions: readonly CompiledRestriction[], name: string): boolean {
  for (const r of restrictions) {
    if (r.allow !== undefined && !r.allow.has(name)) return false;
    if (r.deny !== undefined && r.deny.has(name)) return false;
  }
  return true;
}

function isOwner(value: unknown): value is RegistrationOwner {
  return typeof value === "object" && value !== null && typeof (value as RegistrationOwner).effect === "function";
}

/**
 * The tool registry and execution pipeline (the `ctx.tools` service).
 *
 * Visibility: a tool registered through a scoped context is visible in that
 * scope and its descendants and shadows a global tool of the same name; a
 * scope sees its own tools plus what its parent sees, filtered by the scope's
 * restrictions. `schemas()` is sorted by tool name, so a request's tool list
 * does not depend on registration order.
 *
 * Execution (`execute()`): `tools/pre-execute` (allow / deny / ask; a listener
 * may rewrite, or repair, the input) → the definition's `checkArgs` on the input
 * as it will run (invalid arguments are `INVALID_ARGS` before any guard or
 * approver is asked) → guards → approval for `ask` → `tools/execute` around the body (with `timeoutMs`) →
 * `tools/post-execute` (accept / replace / block) → `finalizeContent` once →
 * `tools/result` with the deep-frozen result. Failures are results, never
 * exceptions: `UNKNOWN_TOOL`, `INVALID_ARGS`, `INVALID_TOOL_OUTPUT`, `DENIED`,
 * `TIMEOUT`, `ABORTED`, `BLOCKED`, `HOOK_FAILED`, `TOOL_FAILED` (or the code
 * of a `HarnessError` the body threw).
 *
 * @example Registering and executing a tool
 * ```ts
 * import { createKernel, defineTool, ToolRuntime } from "@dsh/harness";
 * import { z } from "zod";
 * import assert from "node:assert/strict";
 *
 * const tools = new ToolRuntime(createKernel());
 * tools.register(defineTool({
 *   name: "echo",
 *   description: "Echo the text",
 *   parameters: z.object({ text: z.string() }),
 *   output: { schema: z.string(), render: (_args, text) => text },
 *   execute: ({ text }) => text,
 * }));
 * assert.deepEqual(tools.schemas().map((s) => Object.keys(s)), [["name", "description", "parameters"]]);
 * const signal = new AbortController().signal;
 * const result = await tools.execute({ callId: "c1", name: "echo", arguments: '{"text":"hi"}', signal });
 * assert.deepEqual(result.message.content, [{ type: "tool-result", toolCallId: "c1", content: [{ type: "text", text: "hi" }] }]);
 * const missing = await tools.execute({ callId: "c2", name: "nope", arguments: "", signal });
 * assert.equal(missing.error?.code, "UNKNOWN_TOOL");
 * ```
 */
export class ToolRuntime {
  #version = 0;
  // Weak per scope, so a disposed agent's scope does not keep its schemas alive.
  readonly #schemaCache = new WeakMap<object, { version: number; schemas: ToolSchema[] }>();
  readonly #globalKey = {};
  readonly #host: ServiceHost;
  readonly #options: ToolRuntimeOptions;
  readonly #layers = new Map<ScopeInfo | undefined, Map<string, AnyToolDefinition>>();
  readonly #restrictions = new Map<ScopeInfo, CompiledRestriction[]>();
  #globalRestrictions: CompiledRestriction[] = [];
  #guards: GuardEntry[] = [];
  #subjectGuards: SubjectGuardEntry[] = [];
  #deps: PipelineDeps | undefined;

  /**
   * Create a runtime hosted by `host` (normally the plugin context of
   * `toolRuntimePlugin`): global registrations live as long as it.
   *
   * @param host The hosting context.
   * @param options Approvals and id generation.
   */
  constructor(host: ServiceHost, options: ToolRuntimeOptions = {}) {
    this.#host = host;
    this.#options = options;
  }

  /**
   * Register a tool in the scope of `owner` (global when omitted).
   *
   * @param definition The tool.
   * @param owner The registering context; the registration goes away with it.
   * @returns A disposer that removes the tool.
   * @throws {HarnessError} `INVALID_TOOL_DEFINITION` for an invalid definition,
   *   `TOOL_ALREADY_REGISTERED` when the scope already has a tool of that name.
   */
  register(definition: AnyToolDefinition, owner?: RegistrationOwner): () => void {
    validateToolShape(definition);
    const scope = owner?.scope;
    const layer = this.#layers.get(scope);
    if (layer?.has(definition.name)) {
      throw new HarnessError(
        "TOOL_ALREADY_REGISTERED",
        `Tool "${definition.name}" is already registered ${scope ? `in scope "${scope.key}"` : "globally"}`,
        { details: { name: definition.name, scope: scope?.key } },
      );
    }
    return this.#own(owner, "tool", () => {
      let map = this.#layers.get(scope);
      if (map === undefined) this.#layers.set(scope, map = new Map());
      map.set(definition.name, definition);
      this.#changed();
      return () => {
        if (map.get(definition.name) === definition) map.delete(definition.name);
        if (map.size === 0 && this.#layers.get(scope) === map) this.#layers.delete(scope);
        this.#changed();
      };
    });
  }

  /**
   * The definition a scope resolves for `name`.
   *
   * @param name The tool name.
   * @param scope The viewing scope; omitted for the global view.
   * @returns The definition, or `undefined` when none is visible.
   */
  get(name: string, scope?: ScopeInfo): AnyToolDefinition | undefined {
    if (scope === undefined) {
      const global = this.#layers.get(undefined)?.get(name);
      return global !== undefined && passes(this.#globalRestrictions, name) ? global : undefined;
    }
    const own = this.#layers.get(scope)?.get(name);
    if (own !== undefined) return own;
    const inherited = this.get(name, scope.parent);
    return inherited !== undefined && this.#passes(scope, name) ? inherited : undefined;
  }

  /**
   * The model-facing schemas a scope sees, sorted by name: only `name`,
   * `description` and `parameters`, deep-copied and frozen.
   *
   * @param scope The viewing scope; omitted for the global view.
   * @returns The schemas.
   */
  schemas(scope?: ScopeInfo): ToolSchema[] {
    // Every registration and restriction change bumps the version, so the
    // frozen schemas of a scope are built once per change, not once per request.
    const cached = this.#schemaCache.get(scope ?? this.#globalKey);
    if (cached !== undefined && cached.version === this.#version) return [...cached.schemas];
    const names = new Set<string>(this.#layers.get(undefined)?.keys());
    for (let s = scope; s !== undefined; s = s.parent) {
      for (const name of this.#layers.get(s)?.keys() ?? []) names.add(name);
    }
    const out: ToolSchema[] = [];
    for (const name of [...names].sort()) {
      const definition = this.get(name, scope);
      if (definition === undefined) continue;
      out.push(deepFreeze({
        name: definition.name,
        description: definition.description,
        parameters: structuredClone(definition.parameters) as Record<string, unknown>,
      }));
    }
    this.#schemaCache.set(scope ?? this.#globalKey, { version: this.#version, schemas: out });
    return [...out];
  }

  /**
   * Restrict the tools a scope inherits.
   *
   * @param filter `allow` and/or `deny` lists of tool names.
   * @param owner The scoped context (the restriction goes away with it) or a scope label.
   * @returns A disposer that lifts the restriction.
   * @throws {HarnessError} `INVALID_ARGS` outside a scope or for an empty filter.
   *
   * @example A subagent sees only `read` of the global tools, plus its own `report`
   * ```ts
   * import { createKernel, createScope, defineTool, ToolRuntime } from "@dsh/harness";
   * import { z } from "zod";
   * import assert from "node:assert/strict";
   *
   * const tool = (name: string) =>
   *   defineTool({
   *     name,
   *     description: name,
   *     parameters: z.object({}),
   *     output: { schema: z.null(), render: () => "ok" },
   *     execute: () => null,
   *   });
   * const ctx = createKernel();
   * const tools = new ToolRuntime(ctx);
   * tools.register(tool("read"));
   * tools.register(tool("write"));
   * const sub = createScope(ctx, "subagent");
   * tools.register(tool("report"), sub.ctx);
   * tools.restrict({ allow: ["read"] }, sub.ctx);
   * assert.deepEqual(tools.schemas(sub.info).map((s) => s.name), ["read", "report"]);
   * assert.deepEqual(tools.schemas().map((s) => s.name), ["read", "write"]);
   * await sub.dispose();
   * ```
   */
  restrict(filter: ToolRestriction, owner: RegistrationOwner | ScopeInfo): () => void {
    const scope = isOwner(owner) ? owner.scope : owner;
    if (scope === undefined || typeof scope !== "object" || typeof scope.key !== "string") {
      throw new HarnessError("INVALID_ARGS", "Cannot restrict tools outside a scope");
    }
    const compiled = compileRestriction(filter);
    return this.#own(isOwner(owner) ? owner : undefined, "tool restriction", () => {
      let list = this.#restrictions.get(scope);
      if (list === undefined) this.#restrictions.set(scope, list = []);
      list.push(compiled);
      this.#changed();
      return () => {
        const current = this.#restrictions.get(scope) ?? [];
        const rest = current.filter((r) => r !== compiled);
        if (rest.length) this.#restrictions.set(scope, rest);
        else this.#restrictions.delete(scope);
        this.#changed();
      };
    });
  }

  /**
   * Restrict the global tools themselves, for every view: the global one and
   * what every scope inherits (a scope's own registrations are not affected).
   * A configuration's `tools` list is applied this way, so that it holds for
   * the tools plugins register too. Several global restrictions intersect.
   *
   * @param filter `allow` and/or `deny` lists of tool names.
   * @param owner The registering context; the restriction goes away with it.
   * @returns A disposer that lifts the restriction.
   * @throws {HarnessError} `INVALID_ARGS` for an empty filter.
   */
  restrictGlobal(filter: ToolRestriction, owner?: RegistrationOwner): () => void {
    const compiled = compileRestriction(filter);
    return this.#own(owner, "global tool restriction", () => {
      this.#globalRestrictions = [...this.#globalRestrictions, compiled];
      this.#changed();
      return () => {
        this.#globalRestrictions = this.#globalRestrictions.filter((r) => r !== compiled);
        this.#changed();
      };
    });
  }

  /**
   * Whether a tool of this name is registered globally, whatever a global
   * restriction hides.
   *
   * @param name The tool name.
   * @returns Whether the global layer has it.
   */
  registered(name: string): boolean {
    return this.#layers.get(undefined)?.has(name) ?? false;
  }

  /**
   * Register a monotonic guard. A guard registered through a scoped context
   * applies only to calls of that scope and its descendants.
   *
   * @param guard The guard.
   * @param owner The registering context; the guard goes away with it.
   * @returns A disposer that removes the guard.
   *
   * @example A guard's denial wins over any allow
   * ```ts
   * import { createKernel, defineTool, ToolRuntime, type ToolEvents } from "@dsh/harness";
   * import { z } from "zod";
   * import assert from "node:assert/strict";
   *
   * const ctx = createKernel<ToolEvents>();
   * const tools = new ToolRuntime(ctx);
   * tools.register(defineTool({
   *   name: "rm",
   *   description: "Remove a file",
   *   parameters: z.object({ path: z.string() }),
   *   output: { schema: z.null(), render: () => "removed" },
   *   execute: () => null,
   * }));
   * tools.guard((exec) => (exec.args as { path: string }).path.startsWith("/etc") ? "system files are off limits" : undefined);
   * ctx.on("tools/pre-execute", () => ({ kind: "allow" }));
   * const signal = new AbortController().signal;
   * const result = await tools.execute({ callId: "c1", name: "rm", arguments: '{"path":"/etc/passwd"}', signal });
   * assert.equal(result.error?.code, "DENIED");
   * ```
   */
  guard(guard: ToolGuard, owner?: RegistrationOwner): () => void {
    if (typeof guard !== "function") {
      throw new HarnessError("INVALID_ARGS", "Cannot register a guard that is not a function");
    }
    const entry: GuardEntry = { guard, scope: owner?.scope };
    return this.#own(owner, "tool guard", () => {
      this.#guards.push(entry);
      return () => {
        this.#guards = this.#guards.filter((g) => g !== entry);
      };
    });
  }

  /**
   * Add a subject guard: the file tools ask it, through the call's
   * `permits(subject)`, for every path they reach beyond the one the call was
   * judged on (each file `grep` reads, each entry `glob` and `list_dir`
   * return, the target of a symbolic link), and leave out or refuse what it
   * denies; `web_fetch` asks it for each redirect's target, a URL in the
   * spelling of its subject, and refuses the hop it denies. A guard gets the
   * call (`exec.name`), so it can tell the tools apart. The configured
   * permission rules install one.
   *
   * @param guard The check; a string denies.
   * @param owner The registering context (its scope and lifetime), if any.
   * @returns A disposer.
   */
  subjectGuard(guard: ToolSubjectGuard, owner?: RegistrationOwner): () => void {
    if (typeof guard !== "function") {
      throw new HarnessError("INVALID_ARGS", "Cannot register a subject guard that is not a function");
    }
    const entry: SubjectGuardEntry = { guard, scope: owner?.scope };
    return this.#own(owner, "tool subject guard", () => {
      this.#subjectGuards.push(entry);
      return () => {
        this.#subjectGuards = this.#subjectGuards.filter((g) => g !== entry);
      };
    });
  }

  /**
   * How a call is scheduled. Only an exact `true` from the visible tool's
   * `isConcurrencySafe(args)` is `parallel`; unknown tools, invalid JSON, a
   * missing classifier, any other return and a throw are `exclusive`.
   *
   * @param exec The call (name, raw arguments, scope).
   * @returns The mode.
   */
  executionMode(exec: Pick<ToolExecutionInput, "name" | "arguments" | "scope">): ToolExecutionMode {
    const definition = this.get(exec.name, exec.scope);
    if (definition?.isConcurrencySafe === undefined) return "exclusive";
    try {
      const raw = exec.arguments.trim();
      const args = deepFreeze(raw === "" ? {} : JSON.parse(raw));
      return definition.isConcurrencySafe(args) === true ? "parallel" : "exclusive";
    } catch {
      return "exclusive";
    }
  }

  /**
   * Execute one call through the pipeline.
   *
   * @param input The call.
   * @returns The deep-frozen result (also emitted on `tools/result`); never rejects for a tool failure.
   * @throws {HarnessError} `INVALID_ARGS` (as a rejection) when `input` itself is malformed.
   */
  execute(input: ToolExecutionInput): Promise<ToolExecutionResult> {
    return executeToolCall(this.#deps ??= this.#pipelineDeps(), input);
  }

  // What the pipeline reads of the runtime, made once (read live on each call).
  #pipelineDeps(): PipelineDeps {
    return {
      host: this.#host,
      lookup: (name, scope) => this.get(name, scope),
      guards: (scope) =>
        this.#guards.length === 0 ? [] : this.#guards.filter((g) => appliesTo(g.scope, scope)).map((g) => g.guard),
      subjectGuards: (scope) =>
        this.#subjectGuards.length === 0
          ? []
          : this.#subjectGuards.filter((g) => appliesTo(g.scope, scope)).map((g) => g.guard),
      approvals: () => this.#options.approvals ?? (this.#host.raw.get("approvals") as ApprovalService | undefined),
      newId: () => {
        const newId = this.#options.newId;
        return newId !== undefined ? newId() : crypto.randomUUID();
      },
    };
  }

  #passes(scope: ScopeInfo, name: string): boolean {
    return passes(this.#restrictions.get(scope) ?? [], name);
  }

  #own(owner: RegistrationOwner | undefined, label: string, add: () => () => void): () => void {
    const dispose = (owner ?? this.#host).effect(add, label);
    return () => void dispose();
  }

  #changed(): void {
    this.#version++;
    announce(this.#host, "tools/change");
  }
}
