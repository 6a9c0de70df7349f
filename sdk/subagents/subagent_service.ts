/**
 * `SubagentService` (`ctx.subagents`): subagent definitions, and the run of a
 * delegation as a child agent over a child session.
 *
 * Slightly over the house limit on purpose: a delegation's start, link, run and cleanup are one ordered protocol (a
 * child's log, its lease and its parent's link must be made and undone in a fixed order) and read best in one method;
 * child ids live in `_child_id.ts`.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { durableStart } from "../agent/_durable_start.ts";
import { overRoute } from "../agent/_route.ts";
import type { Session } from "../session/session.ts";
import type { SessionStore } from "../session/session_store.ts";
import type { SystemPrompt } from "../prompt/system_prompt.ts";
import type { ToolRuntime } from "../tools/tool_runtime.ts";
import type { AgentRegistry } from "../agent/agent_registry.ts";
import type { Agent, AgentHandle, AgentOptions } from "../agent/agent.ts";
import type { AgentEvents } from "../agent/agent_events.ts";
import { TurnFailedError } from "../agent/turn_failed_error.ts";
import { type SessionProjections, turnBoundary } from "../projections/mod.ts";
import { childIdBase } from "./_child_id.ts";
import { onAbort } from "../kernel/_on_abort.ts";
import { noteAbandoned } from "../persistence/_stored_prefix.ts";
import type { SubagentDefinition, SubagentMode, SubagentRequest, SubagentResult } from "./subagent_definition.ts";

const NAME = /^[A-Za-z0-9_-]{1,64}$/;

interface Services {
  agents: AgentRegistry;
  sessions: SessionStore;
  tools: ToolRuntime;
  systemPrompt: SystemPrompt;
  sessionProjections: SessionProjections;
}

/** Options of {@linkcode SubagentService}. */
export interface SubagentServiceOptions {
  /**
   * How deep delegations may nest: a child at this depth does not see the delegation tool (with 0, no session
   * may delegate, and `inProcessSubagents` does not register it).
   *
   * @default {1}
   */
  readonly maxDepth?: number;
  /** The delegation tool's name, denied to children at `maxDepth`. @default {"task"} */
  readonly toolName?: string;
}

/**
 * The subagent service. `run()` starts a child agent over a child session
 * (its header names `parentSession`, `origin: "subagent"`, the delegation
 * depth and the definition), in a scope nested in the parent's, with the
 * definition's system prompt and tool restriction; it records
 * `subagent/spawned` in the parent's open turn, sends the prompt, waits for
 * the child's final answer, and disposes the child (its log stays in storage,
 * so it can be resumed). Aborting the request's signal cancels the child with
 * cause `parent`.
 *
 * @example Defining subagents
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { inProcessSubagents } from "@dsh/harness/subagents";
 * import assert from "node:assert/strict";
 *
 * const harness = await createHarness({
 *   plugins: [inProcessSubagents({ agents: [{ name: "researcher", description: "Finds facts" }] })],
 * });
 * const subagents = harness.ctx.get("subagents" as never) as unknown as { list(): { name: string }[] };
 * assert.deepEqual(subagents.list().map((d) => d.name), ["researcher"]);
 * await harness.dispose();
 * ```
 */
export class SubagentService {
  readonly #ctx: HarnessContext<object, Services>;
  readonly #definitions = new Map<string, SubagentDefinition>();
  #changeListeners: (() => void)[] = [];
  readonly #maxDepth: number;
  readonly #toolName: string;
  readonly #creating = new Set<string>();
  // Per parent session, the link (`subagent/spawned`) of its latest delegation: delegations are linked in the order
  // they were asked for, however long each child takes to reach storage (a replayed log must read the same).
  readonly #lastLink = new WeakMap<Session, Promise<void>>();

  /**
   * Create the service over a harness context (needs `agents`, `sessions`, `tools`, `systemPrompt`, `sessionProjections`).
   *
   * @param ctx The context children are made from.
   * @param options Depth limit and tool name.
   */
  constructor(ctx: HarnessContext, options: SubagentServiceOptions = {}) {
    this.#ctx = ctx as unknown as HarnessContext<object, Services>;
    const maxDepth = options.maxDepth ?? 1;
    if (!Number.isInteger(maxDepth) || maxDepth < 0) {
      throw new HarnessError("INVALID_ARGS", `maxDepth must be a non-negative integer, not ${String(maxDepth)}`);
    }
    this.#maxDepth = maxDepth;
    this.#toolName = options.toolName ?? "task";
  }

  /**
   * Add a definition.
   *
   * @param definition The definition.
   * @returns A function that removes it.
   * @throws {HarnessError} `INVALID_ARGS` for a bad name, mode, `system` (not a string), `tools` (not `allow`
   *   and/or `deny` arrays of names), `model` (not an object), `concurrencySafe` or `setup`; `SUBAGENT_EXISTS` for a
   *   taken name.
   */
  define(definition: SubagentDefinition): () => void {
    if (typeof definition?.name !== "string" || !NAME.test(definition.name)) {
      throw new HarnessError("INVALID_ARGS", `Subagent name ${JSON.stringify(definition?.name)} is not valid`);
    }
    if (typeof definition.description !== "string") {
      throw new HarnessError("INVALID_ARGS", `Subagent "${definition.name}" needs a description`);
    }
    if (definition.mode !== undefined && definition.mode !== "in-process" && definition.mode !== "fork") {
      throw new HarnessError("INVALID_ARGS", `Subagent "${definition.name}" has an unknown mode "${definition.mode}"`);
    }
    // Checked here, not when the model first delegates (where a bad definition read as the model's INVALID_ARGS).
    const bad = badField(definition);
    if (bad !== undefined) throw new HarnessError("INVALID_ARGS", `Subagent "${definition.name}": ${bad}`);
    if (this.#definitions.has(definition.name)) {
      throw new HarnessError("SUBAGENT_EXISTS", `A subagent named "${definition.name}" is defined`);
    }
    const frozen = Object.freeze({ ...definition });
    this.#definitions.set(definition.name, frozen);
    this.#changed();
    return () => {
      if (this.#definitions.get(frozen.name) !== frozen) return;
      this.#definitions.delete(frozen.name);
      this.#changed();
    };
  }

  /**
   * Be told when a definition is added or removed (the task tool's listing of
   * subagents follows the definitions this way).
   *
   * @param listener Called after each change.
   * @returns A function that stops the notifications.
   */
  onChange(listener: () => void): () => void {
    this.#changeListeners = [...this.#changeListeners, listener];
    return () => {
      this.#changeListeners = this.#changeListeners.filter((l) => l !== listener);
    };
  }

  #changed(): void {
    for (const listener of this.#changeListeners) {
      try {
        listener();
      } catch (error) {
        console.error("[@dsh/harness] a subagent definitions listener threw:", error);
      }
    }
  }

  /**
   * A definition by name.
   *
   * @param name The name.
   * @returns The definition, or `undefined`.
   */
  get(name: string): SubagentDefinition | undefined {
    return this.#definitions.get(name);
  }

  /**
   * The definitions, in definition order.
   *
   * @returns A new array.
   */
  list(): SubagentDefinition[] {
    return [...this.#definitions.values()];
  }

  /**
   * Run one delegation to its end.
   *
   * @param request The definition name, prompt, parent, call and signal.
   * @returns The child's answer, turn-end reason and usage.
   * @throws {HarnessError} `SUBAGENT_NOT_FOUND`, `SESSION_NOT_FOUND` (no live parent),
   *   `SUBAGENT_DEPTH` (nesting beyond `maxDepth`), `ABORTED` (signal aborted before the child ran: it is disposed
   *   turnless; the log it stored is deleted, unless the abort came once its link was durable: then it stays, linked).
   *   A failure of the child's run (`SESSION_FLUSH_FAILED`: its turn could not be stored) is thrown as it was; when
   *   disposing the child then fails too, its code, message and details are kept and its `cause` is an
   *   `AggregateError` of both failures, the first first.
   */
  async run(request: SubagentRequest): Promise<SubagentResult> {
    const definition = this.#definitions.get(request.agent);
    if (definition === undefined) {
      throw new HarnessError("SUBAGENT_NOT_FOUND", `No subagent named "${request.agent}" is defined`, {
        details: { agent: request.agent, known: [...this.#definitions.keys()] },
      });
    }
    const parent = this.#ctx.service("agents").get(request.parent);
    const parentSession: Session | undefined = parent?.session ?? this.#ctx.service("sessions").get(request.parent);
    if (parentSession === undefined) {
      throw new HarnessError("SESSION_NOT_FOUND", `Cannot delegate: session "${request.parent}" is not live`);
    }
    const depth = (parentSession.header.delegationDepth ?? 0) + 1;
    if (depth > this.#maxDepth) {
      throw new HarnessError("SUBAGENT_DEPTH", `Cannot delegate beyond depth ${this.#maxDepth}`, {
        details: { depth },
      });
    }
    if (request.signal?.aborted) throw new HarnessError("ABORTED", "The delegation was cancelled before it started");
    const mode = definition.mode ?? "in-process";
    const base = childIdBase(parentSession.id, request.callId);
    const taken = new Set<string>();
    let childId = request.childId ?? this.#freeChildId(parentSession, base, taken);
    const header = {
      parentSession: parentSession.id,
      origin: "subagent",
      delegationDepth: depth,
      agentPreset: definition.name,
      ...(parentSession.header.cwd !== undefined ? { cwd: parentSession.header.cwd } : {}),
    };
    // Field by field over the parent's route while the definition keeps its model; whole when it names another
    // (the parent's reasoning effort or token limit is not another model's to take).
    const route = overRoute(parent?.options, definition.model);
    const owner = parent?.ctx ?? (this.#ctx as unknown as HarnessContext);
    const setup = async (ctx: HarnessContext, agent: Agent) => {
      // A fork's seed may hold input the parent had queued: the child answers only its task.
      if (mode === "fork") agent.inbox.clear();
      this.#apply(definition, ctx, depth);
      await definition.setup?.(ctx, agent);
    };
    // Linked in the order the delegations were asked for (synchronously up to here), whatever each child's start
    // takes: a replayed log reads the same.
    const previousLink = this.#lastLink.get(parentSession);
    let linked!: () => void;
    const link = new Promise<void>((resolve) => linked = resolve);
    this.#lastLink.set(parentSession, link);
    let handle: AgentHandle | undefined;
    // Whether the parent's link to the child is durable: a child cancelled after it keeps its log (linked, turnless).
    let durablyLinked = false;
    try {
      while (handle === undefined) {
        const id = childId;
        this.#creating.add(id);
        try {
          const started = await this.#start(mode, { childId: id, parentSession, route, owner, header, setup });
          // With storage, the child holds its lease and is stored before the parent links it (or it is disposed).
          await durableStart(started);
          handle = started;
        } catch (error) {
          // A name storage holds that this harness did not know of (a child log left by an earlier life of the
          // parent, or another instance's): the next free one. A caller's own childId is not renamed.
          const renamable = request.childId === undefined && taken.size < 8;
          if (!renamable || !HarnessError.isInstance(error, "SESSION_ALREADY_EXISTS")) throw error;
          taken.add(id);
          childId = this.#freeChildId(parentSession, base, taken);
        } finally {
          this.#creating.delete(id);
        }
      }
      await previousLink;
      // Cancelled while the child started: it is disposed before it runs a turn, and the log it stored is deleted
      // (see the catch below): a cancel leaves no unlinked child log behind, and every child log with a turn is linked
      // from its parent. After the link is durable the signal is checked again; from there to the child's run nothing
      // awaits: a later abort cancels a linked, running child.
      if (request.signal?.aborted) throw notStarted(childId);
      // The link is a log-only event of the parent's open turn (a delegation made outside any turn is
      // still found through the child's header, `parentSession`).
      if (this.#ctx.service("sessionProjections").stateOf(parentSession, turnBoundary).open !== undefined) {
        parentSession.append("subagent/spawned", {
          turn: request.turn,
          step: request.step,
          callId: request.callId,
          session: childId,
          mode,
          agent: definition.name,
        });
        // Durable before the child runs a turn: after a crash, a child log with a turn is linked from its parent
        // (the parent's batch might otherwise still hold the link while the child's turn is already stored).
        await this.#ctx.service("sessions").flush(parentSession);
        durablyLinked = true;
        if (request.signal?.aborted) throw notStarted(childId);
      }
    } catch (error) {
      // A child started and never run nor durably linked: its log (a header, or a fork's seed) is not kept.
      if (handle !== undefined && !durablyLinked) noteAbandoned(handle.agent.session);
      await handle?.dispose().catch(() => {/* the first error is the one to report */});
      throw error;
    } finally {
      linked();
      if (this.#lastLink.get(parentSession) === link) this.#lastLink.delete(parentSession);
    }
    const child = handle.agent;
    const stopCancelling = request.signal !== undefined
      ? onAbort(request.signal, () => child.cancel("parent"))
      : undefined;
    let failed: { error: unknown } | undefined;
    try {
      const running = child.run(request.prompt);
      // A child's failed turn is an outcome of the delegation (the task tool reports it), not a throw.
      const result = await running.catch((error: unknown) =>
        error instanceof TurnFailedError ? error.result : Promise.reject(error)
      );
      return { session: childId, text: result.text, reason: result.reason, usage: result.usage };
    } catch (error) {
      failed = { error };
      throw error;
    } finally {
      stopCancelling?.();
      // The child's own failure (its last write, say) is the one reported; a dispose that fails after it (the same
      // write refused again at release) is kept with it, never in its place.
      if (failed === undefined) await handle.dispose();
      else await handle.dispose().catch((disposeError: unknown) => Promise.reject(both(failed!.error, disposeError)));
    }
  }

  /**
   * Give a child agent its definition's prompt and tool restriction, and run
   * its `setup` (the child's own tools, sections and listeners) before its
   * first turn, as a maintenance task. The subagents plugin calls it for every
   * session resumed by other means (`harness.resumeAgent`); it recognises a
   * child by its header (`origin: "subagent"`, `agentPreset` naming a
   * definition). A `setup` that throws is emitted as `agent/error`, and the
   * child then sees none of the tools it inherits.
   * `harness.resumeAgent` resumes a child whose parent agent is live in the
   * parent's scope (its scoped tools, restrictions and guards hold, and the
   * child is disposed with it); a child resumed without its live parent sees
   * none of the tools it inherits (what the parent's scope restricted in code
   * cannot be known): resume the parent first.
   *
   * Fails closed: a child is always held to the depth limit its header's
   * `delegationDepth` implies, and a child whose definition is not known here
   * (removed, renamed, or never defined in this process) sees none of the tools
   * it inherits (only those registered in its own scope), since the
   * restriction it was made with cannot be known; its system prompt is the one
   * its log's last request header holds (none if it never sent a request),
   * never the harness's.
   *
   * @param agent The resumed agent.
   * @returns `true` when the agent is a child of a known definition and was set up; `false` for a session that is
   *   not a child, and for a child of an unknown definition (restricted as above).
   */
  adopt(agent: Agent): boolean {
    const header = agent.session.header;
    if (header.origin !== "subagent" || this.#creating.has(agent.id)) return false;
    const depth = header.delegationDepth ?? 1;
    const definition = header.agentPreset === undefined ? undefined : this.#definitions.get(header.agentPreset);
    if (definition === undefined) {
      // Its prompt is the one it last ran with (the log's request header), not the harness's: a child never sees
      // its lead's instructions. Taken literally: the logged text is already rendered.
      const system = agent.session.requestHeader()?.system ?? "";
      this.#ctx.service("systemPrompt").section(
        { name: "subagent", text: system.replaceAll("{{", "\\{{"), order: 0, complete: true },
        agent.ctx,
      );
      const tools = this.#ctx.service("tools");
      tools.restrict({ allow: [] }, agent.ctx);
      if (depth >= this.#maxDepth) tools.restrict({ deny: [this.#toolName] }, agent.ctx);
      return false;
    }
    this.#apply(definition, agent.ctx, depth);
    // Resumed without its live parent (harness.resumeAgent nests a child in a live parent's scope): what the parent's
    // scope restricted in code (setup, restrict(), guards) cannot be known, so no inherited tool is seen.
    const parent = header.parentSession === undefined
      ? undefined
      : this.#ctx.service("agents").get(header.parentSession);
    if (parent === undefined || agent.ctx.scope?.parent !== parent.ctx.scope) {
      this.#ctx.service("tools").restrict({ allow: [] }, agent.ctx);
    }
    // The child's own tools, sections and listeners, as when it was made: registered before its first turn here (a
    // maintenance task holds turns back until it settles). A setup that fails is the agent's error; the child then
    // sees none of the tools it inherits, as a child whose definition is unknown (fails closed).
    const setup = definition.setup;
    if (setup !== undefined) {
      agent.runMaintenance(() => setup(agent.ctx, agent)).catch((error: unknown) => {
        // Disposed before its setup ran: nothing is left to set up or to report.
        if (HarnessError.isInstance(error, "AGENT_DISPOSED")) return;
        this.#ctx.service("tools").restrict({ allow: [] }, agent.ctx);
        (this.#ctx as unknown as HarnessContext<AgentEvents>).emit("agent/error", agent, error);
      });
    }
    return true;
  }

  // The children a parent's log links, read on from where the last spawn left off: a copy and a scan of the whole
  // log per spawn had made delegation O(log) (16 ms a parent turn at 444k events).
  readonly #children = new WeakMap<Session, { read: number; readonly ids: Set<unknown> }>();

  #childrenOf(parent: Session): ReadonlySet<unknown> {
    let known = this.#children.get(parent);
    if (known === undefined) this.#children.set(parent, known = { read: 0, ids: new Set() });
    const end = parent.seq;
    for (let seq = known.read; seq < end; seq++) {
      const event = parent.at(seq)!;
      if (event.type === "subagent/spawned") known.ids.add(event.data.session);
    }
    known.read = end;
    return known.ids;
  }

  // `base` (`<parent>.<call id>`, see childIdBase), or with `.2`, `.3`… when a child of that name was already made:
  // models and servers reuse call ids across turns (`call_0`), and two children must never share one session (and
  // one stored log). `taken`: names storage refused.
  #freeChildId(parent: Session, base: string, taken: ReadonlySet<string>): string {
    const made = this.#childrenOf(parent);
    const sessions = this.#ctx.service("sessions");
    let id = base;
    const used = (id: string) =>
      made.has(id) || taken.has(id) || this.#creating.has(id) || sessions.get(id) !== undefined;
    for (let n = 2; used(id); n++) id = `${base}.${n}`;
    return id;
  }

  #start(
    mode: SubagentMode,
    o: {
      childId: string;
      parentSession: Session;
      route: Partial<AgentOptions>;
      owner: HarnessContext;
      header: Readonly<Record<string, unknown>>;
      setup: (ctx: HarnessContext, agent: Agent) => Promise<void>;
    },
  ): Promise<AgentHandle> {
    const agents = this.#ctx.service("agents");
    if (mode === "fork") {
      const prefix = this.#ctx.service("sessionProjections").stateOf(o.parentSession, turnBoundary).completedPrefix;
      return agents.resume(o.owner, {
        ...o.route,
        sessionId: o.childId,
        events: o.parentSession.slice(0, prefix),
        header: { ...o.header, seedLength: prefix },
        setup: o.setup,
      });
    }
    return agents.create(o.owner, { ...o.route, id: o.childId, header: o.header, setup: o.setup });
  }

  #apply(definition: SubagentDefinition, ctx: HarnessContext, depth: number): void {
    if (definition.system !== undefined) {
      this.#ctx.service("systemPrompt").section(
        { name: "subagent", text: definition.system, order: 0, complete: true },
        ctx,
      );
    }
    const tools = this.#ctx.service("tools");
    if (definition.tools !== undefined) tools.restrict(definition.tools, ctx);
    if (depth >= this.#maxDepth) tools.restrict({ deny: [this.#toolName] }, ctx);
  }
}

/**
 * A delegation's failure, then its child's dispose's: the first as it was (a `HarnessError` keeps its code, message
 * and details, so callers and the task tool see the real failure), with both kept in an `AggregateError` as its
 * `cause` (first failure first, as the agent's teardown combines its failures).
 */
function both(first: unknown, disposeError: unknown): unknown {
  const errors = new AggregateError([first, disposeError], "The delegation failed, and disposing its child failed too");
  if (!HarnessError.isInstance(first)) return errors;
  return new HarnessError(first.code, first.message, { cause: errors, details: first.details });
}

function notStarted(session: string): HarnessError {
  return new HarnessError("ABORTED", "The delegation was cancelled before its child started", { details: { session } });
}

/** What is wrong with a definition's optional fields, if anything. */
function badField(d: SubagentDefinition): string | undefined {
  const names = (list: unknown) => Array.isArray(list) && list.every((n) => typeof n === "string");
  if (d.system !== undefined && typeof d.system !== "string") return "system must be a string";
  if (d.tools !== undefined) {
    const { allow, deny } = (typeof d.tools === "object" && d.tools !== null ? d.tools : {}) as Record<string, unknown>;
    const ok = (allow !== undefined || deny !== undefined) && (allow === undefined || names(allow)) &&
      (deny === undefined || names(deny));
    if (!ok) return "tools must be { allow?, deny? } with at least one array of tool names";
  }
  if (d.model !== undefined && (typeof d.model !== "object" || d.model === null || Array.isArray(d.model))) {
    return "model must be an object of route overrides";
  }
  if (d.concurrencySafe !== undefined && typeof d.concurrencySafe !== "boolean") {
    return "concurrencySafe must be a boolean";
  }
  if (d.setup !== undefined && typeof d.setup !== "function") return "setup must be a function";
  return undefined;
}
