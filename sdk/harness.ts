/**
 * `createHarness()`: a kernel with the default plugins wired — session store,
 * LLM runtime, tool runtime, system prompt, agent registry and the agent loop.
 *
 * Longer than the house limit on purpose: half of it is the documented public surface (`CreateHarnessOptions`,
 * `Harness`, `ResumeOptions` and their JSDoc); the rest is `createHarness()`, whose closures share one kernel and one
 * set of live agents, so that creating, resuming, forking, deleting and disposing agents keep one order of teardown.
 * What needs none of that state is out of line (`_apply_config.ts`, `agent/_durable_start.ts`,
 * `persistence/_delete_tree.ts`).
 *
 * @module
 */

import {
  closeRoot,
  createKernel,
  type HarnessContext,
  type HarnessPlugin,
  type KernelEvents,
  unwind,
} from "./kernel/harness_context.ts";
import { HarnessError } from "./kernel/harness_error.ts";
import { calledFromAgentTeardown, calledFromTeardown, fiberOf } from "./kernel/_teardown_calls.ts";
import type { LlmAdapter } from "./llm/llm_adapter.ts";
import type { LlmEvents } from "./llm/llm_events.ts";
import { type LlmRuntime, llmRuntimePlugin } from "./llm/llm_runtime.ts";
import { checkRetryPolicy, type RetryPolicy } from "./llm/retry_policy.ts";
import { Session, type SessionProfile } from "./session/session.ts";
import type { SessionEvent } from "./session/session_events.ts";
import { forkBoundary, type SessionEvents, type SessionStore, sessionStorePlugin } from "./session/session_store.ts";
import type { ApprovalService } from "./tools/approval_service.ts";
import type { ToolDefinition } from "./tools/tool_definition.ts";
import type { ToolEvents } from "./tools/tool_events.ts";
import type { ToolRuntime } from "./tools/tool_runtime.ts";
import { installToolRuntime } from "./tools/tool_runtime_plugin.ts";
import { SystemPrompt } from "./prompt/system_prompt.ts";
import type { SystemPromptEvents } from "./prompt/system_prompt_events.ts";
import { type HeldWriters, installPersistence } from "./persistence/persistence_plugin.ts";
import { incarnationOf } from "./session/_incarnation.ts";
import { notFound } from "./persistence/_errors.ts";
import { durableStart, storageError } from "./agent/_durable_start.ts";
import { type SessionProjections, sessionProjectionsPlugin } from "./projections/session_projections.ts";
// The configuration's machinery (`./_apply_config.ts`, which brings permission rules and memory storage) is
// imported when a configuration is given: a program that passes none does not load it.
import type { AdapterFactory, ConfigInput, EnvReader, StorageFactory } from "./_apply_config.ts";
import type { SessionStorage } from "./persistence/session_storage.ts";
import { deleteSessionTree, liveAndStoredDescendants, subagentDescendants } from "./persistence/_delete_tree.ts";
import type { CapabilityServices } from "./capabilities/capabilities_plugin.ts";
import type { Agent, AgentHandle, AgentOptions } from "./agent/agent.ts";
import type { AgentEvents } from "./agent/agent_events.ts";
import { AgentRegistry, type CreateAgentOptions } from "./agent/agent_registry.ts";
import { createLoopFactory } from "./agent/agent_loop_plugin.ts";
import { overRoute } from "./agent/_route.ts";
import { LoopAgent } from "./agent/agent_loop.ts";
import { randomId } from "./session/_flat_string.ts";

/** Every event of a harness: the kernel's and each subsystem's. Applications may augment it. */
export interface HarnessEvents
  extends KernelEvents, SessionEvents, LlmEvents, ToolEvents, SystemPromptEvents, AgentEvents {}

/**
 * Every service of a harness, readable as `ctx.<name>`. The capability services
 * (`ctx.subprocess`, …) are present once `capabilitiesPlugin` from
 * `@dsh/harness/tools` provides them. Applications may augment it.
 */
export interface HarnessServices extends Partial<CapabilityServices> {
  sessions: SessionStore;
  llm: LlmRuntime;
  tools: ToolRuntime;
  systemPrompt: SystemPrompt;
  agents: AgentRegistry;
  approvals: ApprovalService;
  sessionProjections: SessionProjections;
}

/** The context of a harness. */
export type HarnessCtx = HarnessContext<HarnessEvents, HarnessServices>;

/**
 * A plugin with its configuration, as `createHarness` accepts it. In the
 * `[plugin, config]` form the plugin may take any configuration type
 * (`never` accepts every parameter type); the pair is not checked against it.
 */
export type PluginEntry =
  | HarnessPlugin<void, HarnessEvents, HarnessServices>
  | readonly [
    HarnessPlugin<never, HarnessEvents, HarnessServices>,
    unknown,
  ];

/** A system prompt section given to `createHarness`. */
export interface SystemSection {
  /** Unique name; a later section with the same name shadows an earlier one. */
  readonly name: string;
  /** The text, or a function evaluated at every assembly. */
  readonly text: string | (() => string | Promise<string>);
  /**
   * Position: -100 identity, 0 persona, 100–199 tool guidance.
   *
   * @default {0}
   */
  readonly order?: number;
}

/** Options of {@linkcode createHarness}. */
export interface CreateHarnessOptions {
  /** Provider adapters to register. */
  readonly adapters?: readonly LlmAdapter[];
  /**
   * The route agents use when they name none. With a `config`, it is applied over the configured
   * model field by field while it keeps the configured provider and model (`{ temperature: 0 }`); one that
   * names another provider or model replaces it whole (a model alone keeps the configured provider).
   * An agent's own route (`createAgent`, and `resumeAgent` over the recorded one) combines with it the
   * same way: an agent that names another provider or model takes none of its sampling settings.
   *
   * @default {the first model of the adapter, when exactly one adapter is given}
   */
  readonly model?: Partial<AgentOptions>;
  /** Tools registered globally. */
  readonly tools?: readonly ToolDefinition[];
  /** The system prompt: one string (a persona section) or sections. */
  readonly system?: string | readonly SystemSection[];
  /** Extra plugins, started after the default ones. */
  readonly plugins?: readonly PluginEntry[];
  /**
   * The most tool calls of one step that run at once.
   *
   * @default {10}
   */
  readonly maxParallelToolCalls?: number;
  /**
   * The most model steps of one turn: a turn whose model still calls tools
   * after this many steps ends `blocked` instead of starting another (its
   * tool results are logged; the next input continues the conversation).
   * A bound for a model that would call tools for ever. A model that
   * answered at the bound ends its turn `completed`, also when steering or
   * injected context waits for a next step: that input waits for the next
   * turn. A turn ended by the bound does not dispatch `agent/turn-stopping`
   * (Stop hooks): it cannot go on.
   *
   * @default {unbounded}
   */
  readonly maxSteps?: number;
  /**
   * Run the runtime invariants (request reconstruction on every request).
   *
   * @default {true}
   */
  readonly invariants?: boolean;
  /** @default {DEFAULT_RETRY_POLICY} */
  readonly retryPolicy?: RetryPolicy;
  /** The clock of every log entry. @default {Date.now} */
  readonly now?: () => number;
  /**
   * Id generator for sessions, messages, inbox entries and tool results. Message ids must stay unique within a
   * session across restarts (a counter that starts again on every process repeats them when a session is resumed;
   * `checkInvariants` reports `MESSAGE_ID_REPEATED`).
   *
   * @default {crypto.randomUUID}
   */
  readonly newId?: () => string;
  /** Sleep between retries. @default {a timer that honours the signal} */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /**
   * Where sessions are persisted; without it sessions live in memory only and
   * `resumeAgent` cannot load anything.
   */
  readonly storage?: SessionStorage;
  /**
   * How long committed events may wait before they are written, in milliseconds.
   *
   * @default {200}
   */
  readonly batchWindowMs?: number;
  /**
   * A configuration (from `loadConfig` / `resolveConfig`): its model, adapters,
   * enabled tools, permission rules, storage, plugins and knobs apply, and the
   * explicit options above override them.
   */
  readonly config?: ConfigInput;
  /**
   * Adapter factories by configured `kind`; pass `adapterKinds` from
   * `@dsh/harness/adapters` (the core never imports adapters itself).
   */
  readonly adapterKinds?: Readonly<Record<string, AdapterFactory>>;
  /**
   * Storage factories by configured `kind`, for kinds whose driver the core
   * does not carry: `{ postgres: postgresStorageKind(...) }` from `@dsh/harness/postgres`,
   * `{ file: fileStorageKind() }` for a `file` storage in a configuration that did not come from
   * `loadConfig()`/`resolveConfig()` (their result carries it). Given kinds win over those.
   */
  readonly storageKinds?: Readonly<Record<string, StorageFactory>>;
  /** Reads the environment variables named by `apiKeyEnv` and `urlEnv`. @default {process.env} */
  readonly env?: EnvReader;
}

/** Options of {@linkcode Harness.forkAgent}. */
export interface ForkAgentOptions extends Omit<CreateAgentOptions, "id"> {
  /** The inclusive seq the prefix ends at. @default {the source's last event} */
  readonly boundary?: number;
  /** The new agent's id. @default {a generated id} */
  readonly id?: string;
}

/** Options of {@linkcode Harness.resumeAgent}: route overrides and setup. */
export interface ResumeOptions extends Omit<CreateAgentOptions, "id"> {
  /**
   * Start the input the session has queued — followups, steering and
   * injected context: acknowledged input of an earlier life, or input a
   * crash caught between its claim and its step — as soon as the agent holds
   * the lease, as `agent.wake()` does. Without it the input waits, as any
   * queued input does, for the next input that wakes the agent.
   *
   * @default {false}
   */
  readonly wake?: boolean;
}

/** A running harness. */
export interface Harness {
  /** The root plugin context. */
  readonly ctx: HarnessCtx;
  /** The live session store. */
  readonly sessions: SessionStore;
  /**
   * Create an agent over a new session. With storage, the agent is handed out
   * once its session holds the writer lease and is on storage.
   *
   * @throws {HarnessError} `INVALID_ARGS` for a route without a provider and a model, or a sampling setting out of
   *   bounds (`temperature` 0–2, `maxTokens` a positive integer, `stop` strings; `details.field` names it); the
   *   storage's error when it cannot be (`SESSION_WRITER_BUSY` when another process holds the session's lease); the
   *   agent is then disposed.
   */
  createAgent(options?: CreateAgentOptions): Promise<Agent>;
  /**
   * Continue a stored session in a new agent: the log is loaded (and repaired
   * if the process that wrote it crashed), the inbox rebuilt from it, and the
   * next request records a `resume` header. The agent keeps the route of the
   * last recorded request (else its stored profile's), but for the fields the
   * adapter filled in, which the adapter now serving it fills in again; the
   * options override it. The agent is handed out once it holds the session's
   * writer lease. Input a crash caught between its claim
   * and its step's messages goes back to the inbox; queued followups start at
   * once with `wake: true`, else at the next input that wakes the agent. A
   * subagent's session (header `origin: "subagent"`) whose parent agent is
   * live is resumed in the parent's scope, and disposed with the parent.
   *
   * @throws {HarnessError} `NO_STORAGE` without storage, `SESSION_NOT_FOUND`, `SESSION_ALREADY_EXISTS` when live,
   *   `SESSION_WRITER_BUSY` when another process holds the session's lease (nothing is left live).
   */
  resumeAgent(sessionId: string, options?: ResumeOptions): Promise<Agent>;
  /** The storage given in the options, if any. */
  readonly storage: SessionStorage | undefined;
  /**
   * Dispose one agent created by this harness: its turn stops, its session's
   * last write is made and its lease released. A call made while an earlier
   * one is under way returns that call's promise. A call made from code that
   * teardown runs and waits for — an undo of the agent's scope (`agent.ctx`),
   * a `session/release` listener, before its first `await` — would wait for
   * itself: it settles at once instead, resolved (the teardown under way goes
   * on, and the first call reports its failure). Code the teardown waits for
   * that calls it later, after an `await` (or a turn's tool, a maintenance
   * task: the teardown stops them and waits for them), must not await it.
   *
   * @throws {HarnessError} `AGENT_NOT_FOUND` for an agent this harness did not create or that is disposed; the
   *   storage's error when that last write failed (after everything else was undone), or what an undo of its scope's
   *   registrations threw (an `AggregateError` when both failed).
   */
  disposeAgent(agent: Agent | string): Promise<void>;
  /**
   * Delete a session with its subagent descendants (sessions whose header has `origin: "subagent"` and names it, up
   * its `parentSession` chain; forks are sessions of their own and stay). The live agent of the session (created,
   * resumed or forked by this harness) is disposed first — a running turn stops, and the delegations it runs are
   * cancelled and their children disposed with it —, then every live agent of a descendant this harness made (a
   * child resumed on its own); a failed last write of one does not fail the delete (its log is deleted). Then, with
   * storage, the logs are deleted, every child before its parent, so a delete that fails midway leaves no child
   * whose parent is gone; the session's own lease is held meanwhile (no child is made meanwhile). Children left
   * stored by a session deleted before are deleted too, even when the session itself is no longer stored. Finding
   * them asks the storage when it can (`storage.listSubagentDescendants(id)`: `postgresStorage` walks an index and
   * reads no other header); otherwise it reads every stored session's header (`storage.list()`), and a delete costs
   * time in proportion to the sessions stored (file storage: about 0.5 s at 1,000 sessions, 1 s at 4,000, measured on
   * this machine).
   *
   * @returns Whether the session, or a descendant, was live here or stored.
   * @throws {HarnessError} `SESSION_WRITER_BUSY` when the session or a descendant is written elsewhere (another
   *   process, or a live session of this one that is not an agent this harness made): nothing is deleted when the
   *   session is busy from the start, only descendants (children before their parent) when one of them is. The
   *   session's lease is given up just before its own log is deleted (a file log deleted under its lease would leave
   *   its folder): a writer that takes it in that moment makes the delete fail busy with the descendants deleted
   *   (the storage interface has no delete of a log together with its lease yet).
   */
  deleteSession(sessionId: string): Promise<boolean>;
  /**
   * Fork a session at a turn boundary into a new live session (on storage,
   * when storage is set, before it is handed out). The source may be live, or
   * only in storage.
   *
   * @throws {HarnessError} the storage's error when the child cannot be stored (it is then removed).
   */
  fork(source: Session | string, boundary?: number, childId?: string): Promise<Session>;
  /**
   * Fork a session (live, or only in storage) at a turn boundary into a new
   * live agent that continues from the prefix (on storage, when storage is
   * set, before it is handed out).
   *
   * @throws {HarnessError} `SESSION_NOT_FOUND`, `INVALID_BOUNDARY`, `OPEN_TURN`, `OPEN_COMPACTION` (the prefix ends
   *   inside a compaction, also a manual one still running), `SESSION_ALREADY_EXISTS`.
   */
  forkAgent(source: Session | string, options?: ForkAgentOptions): Promise<Agent>;
  /**
   * Stop every agent, then unwind everything registered through {@linkcode Harness.ctx}, the latest first: the
   * plugins, scopes, listeners and effects added after `createHarness()` returned, the plugins of the options, last
   * the core (persistence, the session store). Idempotent: every call settles with the first, once it is done (a
   * second call made meanwhile waits for it, and rejects as it does). An agent whose `disposeAgent()` is still under
   * way is waited for (its failure is that call's to report) before persistence and the plugins are undone.
   * A call made from code a teardown of this harness runs and waits for — an undo registered through a context of
   * the harness (a server plugin whose close disposes the harness) while the harness is disposed, an agent's
   * `session/release` listener or scope undo, before its first `await` — would wait for itself: it settles at once
   * instead, resolved, having started the disposal if none was under way (a failure is then the outer calls' to
   * report, or, when no call from outside waits for it, written to the console). Such code that calls it after an
   * `await` must not await it. The undo of a plugin or scope disposed on its own is not waited for by the harness's
   * disposal: a call from there is an ordinary one, which waits for the disposal and rejects with its failure. Undo functions that keep
   * registering new ones are stopped after eight rounds, with `TEARDOWN_INCOMPLETE`.
   *
   * @throws {HarnessError} when an agent's last write failed (tried again 50 and 250 ms later when it failed quickly,
   *   as `agent.flushed()` does), or that of another live session (a fork `fork()` handed out), after everything
   *   was disposed (an `AggregateError`
   *   when several things failed): what was not written is reported, never dropped. So is what a plugin's teardown
   *   (an undo of its effects) threw, and `TEARDOWN_INCOMPLETE`.
   */
  dispose(): Promise<void>;
}

/**
 * Create a harness with the default plugins.
 *
 * @param options Adapters, default model, tools, system prompt, plugins and knobs.
 * @returns The harness, once every plugin has started.
 * @throws {HarnessError} when a plugin of the options fails to start (what started is undone first): named in the
 *   message and in `details.plugin`, with the failure's code when it is a `HarnessError` (`PLUGIN_FAILED`
 *   otherwise) and the failure as the cause.
 * @throws {HarnessError} `INVALID_ARGS` when `maxSteps` or a number of `retryPolicy` is not valid (the field named).
 */
export async function createHarness(input: CreateHarnessOptions = {}): Promise<Harness> {
  const options = await withConfig(input);
  if (options.maxSteps !== undefined && !(Number.isSafeInteger(options.maxSteps) && options.maxSteps >= 1)) {
    throw new HarnessError("INVALID_ARGS", `maxSteps must be a positive integer, not ${String(options.maxSteps)}`);
  }
  if (options.retryPolicy !== undefined) checkRetryPolicy(options.retryPolicy);
  const ctx = createKernel<HarnessEvents, HarnessServices>();
  const now = options.now ?? Date.now;
  const newId = options.newId ?? randomId;
  const handles = new Map<string, AgentHandle>();
  // The teardowns of agents disposeAgent() let go of (settled promises, never rejected).
  const leaving = new Set<Promise<void>>();
  // The teardowns of disposeAgent() calls under way, by agent id, and the fibers of those agents' scopes.
  const disposing = new Map<string, Promise<void>>();
  const disposingFibers = new Map<string, object>();
  // Leases resumeAgent took and loaded under, handed to the persistence plugin at the session's announcement.
  const held: HeldWriters = new Map();
  let disposed = false;
  // A creation racing dispose(): what fails because the harness went away meanwhile (its services gone) is
  // HARNESS_DISPOSED, the failure as its cause; an agent started meanwhile is let go, not handed out.
  const whileLive = async <T>(what: string, start: () => Promise<T>): Promise<T> => {
    if (disposed) throw new HarnessError("HARNESS_DISPOSED", `Cannot ${what}: the harness is disposed`);
    try {
      return await start();
    } catch (error) {
      if (!disposed || HarnessError.isInstance(error, "HARNESS_DISPOSED")) throw error;
      throw new HarnessError("HARNESS_DISPOSED", `Cannot ${what}: the harness was disposed meanwhile`, {
        cause: error,
      });
    }
  };
  const keep = async (handle: AgentHandle): Promise<Agent> => {
    if (disposed) {
      await handle.dispose();
      throw new HarnessError(
        "HARNESS_DISPOSED",
        "The harness was disposed while the agent started (with storage, its session is stored)",
        { details: { sessionId: handle.agent.id } },
      );
    }
    handles.set(handle.agent.id, handle);
    return handle.agent;
  };

  // A child resumed in its live parent's scope stops when the parent is disposed, before that scope (and the
  // child's own, nested in it) unwinds: it never runs without the restrictions it was made under.
  const disposeWithParent = (handle: AgentHandle): void => {
    const parentId = handle.agent.session.header.parentSession;
    const off = (ctx as unknown as HarnessContext<AgentEvents>).on("agent/disposed", (agent) => {
      if (agent.id !== parentId && agent !== handle.agent) return;
      off();
      if (agent === handle.agent || handles.get(handle.agent.id) !== handle) return;
      handles.delete(handle.agent.id);
      // Out of the list but still tearing down: dispose() waits for it, as for a disposeAgent() under way.
      const settled = handle.dispose().then(() => {}, () => {/* reported as agent/error */});
      leaving.add(settled);
      void settled.then(() => leaving.delete(settled));
    });
  };

  // The core services come from one plugin: the public plugins' bodies run on its context, so their
  // registrations are the same, in the same order, and are undone together when the harness is disposed. One
  // Cordis fiber instead of eight (each an effect, an asynchronous start and its state updates) is about a
  // quarter of a cold createHarness() (bench/PROFILE.md, "Cold start, fifth pass").
  const core = ctx.plugin((pctx: HarnessCtx) => {
    sessionStorePlugin.apply(pctx as never, { now, newId });
    // The retry policy and sleep on `ctx.llm` too, for plugins that retry a call of their own (compaction).
    llmRuntimePlugin(pctx, { retryPolicy: options.retryPolicy, sleep: options.sleep });
    // `systemPromptPlugin`'s body, keeping the prompt at hand: the tool runtime registers its schemas on it at once.
    const prompt = new SystemPrompt(pctx as never);
    pctx.provide("systemPrompt", prompt);
    installToolRuntime(pctx as never, { newId }, prompt);
    sessionProjectionsPlugin(pctx as never);
    const agents = new AgentRegistry();
    pctx.provide("agents", agents);
    if (options.storage) {
      installPersistence(pctx as never, { storage: options.storage, batchWindowMs: options.batchWindowMs }, held);
    }
    // `agentLoopPlugin`'s body, given the registry: a service provided here is visible once this plugin is active.
    const uninstall = agents.setFactory(createLoopFactory(pctx as never, {
      defaultModel: options.model ?? soleAdapterRoute(options.adapters),
      maxParallelToolCalls: options.maxParallelToolCalls,
      maxSteps: options.maxSteps,
      retryPolicy: options.retryPolicy,
      invariants: options.invariants,
      now,
      newId,
      sleep: options.sleep,
    }));
    pctx.effect(() => uninstall, "agent-loop factory");
  });
  const plugins: PluginHandle[] = [];
  try {
    await core.ready;
    for (const name of ["sessions", "llm", "tools", "systemPrompt", "agents", "sessionProjections"] as const) {
      if (ctx.get(name) === undefined) throw new HarnessError("KERNEL", `Default service "${name}" did not start`);
    }
    if (options.adapters?.length) ctx.service("llm").registerAdapter([...options.adapters]);
    for (const tool of options.tools ?? []) ctx.service("tools").register(tool);
    const sections: readonly SystemSection[] = typeof options.system === "string"
      ? [{ name: "persona", text: options.system, order: 0 }]
      : options.system ?? [];
    for (const section of sections) {
      ctx.service("systemPrompt").section({ name: section.name, text: section.text, order: section.order ?? 0 });
    }
    for (const [index, entry] of (options.plugins ?? []).entries()) {
      const plugin = Array.isArray(entry) ? entry[0] : entry;
      const handle = Array.isArray(entry)
        ? ctx.plugin(entry[0] as never, entry[1] as never)
        : ctx.plugin(entry as never);
      plugins.push(handle);
      try {
        await handle.ready;
      } catch (error) {
        throw pluginFailed(plugin, index, error);
      }
    }
  } catch (error) {
    // A plugin (or an adapter, tool or section of the options) that failed to start: what did start is undone, so
    // that no timer or lease of a harness the caller never got keeps the process alive.
    for (const handle of [...plugins].reverse()) await disposeAfterFailure(handle, error);
    await disposeAfterFailure(core, error);
    throw error;
  }

  const harness: Harness = {
    ctx,
    get sessions() {
      return ctx.service("sessions");
    },
    createAgent(agentOptions = {}) {
      return whileLive("create an agent", async () => {
        const handle = await ctx.service("agents").create(ctx as unknown as HarnessContext, agentOptions);
        if (options.storage !== undefined) await durableStart(handle);
        return await keep(handle);
      });
    },
    storage: options.storage,
    resumeAgent(sessionId, resumeOptions = {}) {
      return whileLive("resume an agent", async () => {
        if (options.storage === undefined) {
          throw new HarnessError("NO_STORAGE", "Cannot resume a session: the harness has no storage");
        }
        if (ctx.service("sessions").get(sessionId) !== undefined) {
          throw new HarnessError("SESSION_ALREADY_EXISTS", `Session "${sessionId}" is already live`, {
            details: { sessionId },
          });
        }
        // The lease first, then the load under it: a crash repair is written only by the lease holder (two
        // resumers repairing at once cut and appended over each other), and the lease is held from the load on. A
        // missing session is refused before a lease is taken for it (a file lease makes the session's folder).
        if (await options.storage.stat(sessionId) === undefined) throw notFound(sessionId);
        const writer = await options.storage.acquireWriter(sessionId);
        let handle: AgentHandle;
        let handed = false;
        try {
          const loaded = await options.storage.load(sessionId, { writer });
          held.set(sessionId, { writer, incarnation: incarnationOf(loaded.header), storedSeq: loaded.events.length });
          handed = true;
          // A subagent's session resumed while its parent agent is live runs in the parent's scope, as it ran when
          // it was made: the parent's scoped tools, restrictions and guards hold for it.
          const parentId = loaded.header.origin === "subagent" ? loaded.header.parentSession : undefined;
          const parent = parentId === undefined ? undefined : ctx.service("agents").get(parentId);
          handle = await ctx.service("agents").resume(parent?.ctx ?? ctx as unknown as HarnessContext, {
            ...resumeOptions,
            sessionId,
            events: loaded.events,
            header: loaded.header as unknown as Readonly<Record<string, unknown>>,
          });
        } finally {
          // Not adopted by the persistence plugin (the load, or the resume before its session was announced, failed):
          // the lease is given up here. The failure itself is the error reported.
          if (!handed || held.get(sessionId)?.writer === writer) {
            held.delete(sessionId);
            await writer.release().catch(() => {});
          }
        }
        await durableStart(handle);
        const agent = await keep(handle);
        if (agent.ctx.scope?.parent !== ctx.scope) disposeWithParent(handle);
        // With the lease held: input a crash stranded goes back to the inbox (and, asked to, queued followups run).
        LoopAgent.wakeResumed(agent, resumeOptions.wake === true);
        return agent;
      });
    },
    forkAgent(source, forkOptions = {}) {
      return whileLive("fork an agent", async () => {
        const sessions = ctx.service("sessions");
        checkForkSource(source);
        const sourceId = typeof source === "string" ? source : source.id;
        let events: readonly SessionEvent[];
        let parent: { readonly cwd?: string; readonly profile?: SessionProfile };
        const live = typeof source === "string" ? sessions.get(source) : source;
        if (live !== undefined) {
          events = live.events;
          parent = live.header;
        } else if (options.storage !== undefined) {
          const loaded = await options.storage.inspect(sourceId);
          events = loaded.events;
          parent = loaded.header;
        } else {
          throw new HarnessError(
            "SESSION_NOT_FOUND",
            `Session "${sourceId}" is not live and the harness has no storage`,
          );
        }
        const end = forkBoundary(sourceId, events, forkOptions.boundary);
        const { boundary: _b, id, ...rest } = forkOptions;
        const childId = id ?? newId();
        const handle = await ctx.service("agents").resume(ctx as unknown as HarnessContext, {
          ...rest,
          sessionId: childId,
          events: events.slice(0, end + 1),
          header: {
            parentSession: sourceId,
            seedLength: end + 1,
            ...(parent.cwd !== undefined ? { cwd: parent.cwd } : {}),
            // The child keeps the parent's own profile (system text, tools, route).
            ...(parent.profile !== undefined ? { profile: parent.profile } : {}),
          },
        });
        if (options.storage !== undefined) await durableStart(handle);
        return await keep(handle);
      });
    },
    disposeAgent(agent) {
      const id = typeof agent === "string" ? agent : (agent as Agent | undefined)?.id;
      if (typeof id !== "string") {
        return Promise.reject(new HarnessError("INVALID_ARGS", "disposeAgent() takes an agent or its id"));
      }
      // A repeated call while the first is under way gets its promise (and its failure); one from code that teardown
      // runs (an undo of the agent's scope, a session/release listener) would wait for itself: it settles at once.
      const pending = disposing.get(id);
      if (pending !== undefined) return calledFromTeardown(disposingFibers.get(id)!) ? Promise.resolve() : pending;
      const handle = handles.get(id);
      if (handle === undefined) {
        return Promise.reject(new HarnessError("AGENT_NOT_FOUND", `No agent "${id}" was created by this harness`));
      }
      handles.delete(id);
      // Kept until its teardown ends: dispose() waits for it before it unwinds persistence and the plugins, or the
      // agent's last events (its step and turn ends) would find no storage to go to.
      // Its entries go before the caller resumes: a call after it finds the agent gone (AGENT_NOT_FOUND).
      const forget = () => {
        leaving.delete(settled);
        if (disposing.get(id) === teardown) {
          disposing.delete(id);
          disposingFibers.delete(id);
        }
      };
      const teardown: Promise<void> = handle.dispose().then(forget, (error) => {
        forget();
        throw error;
      });
      const settled = teardown.then(() => {}, () => {});
      leaving.add(settled);
      disposing.set(id, teardown);
      disposingFibers.set(id, fiberOf(handle.agent.ctx.raw)!);
      return teardown;
    },
    deleteSession(sessionId) {
      return whileLive("delete a session", async () => {
        const sessions = ctx.service("sessions");
        // Through disposeAgent(), so that a harness.dispose() meanwhile waits for the agent's last write and a
        // disposeAgent() meanwhile shares its teardown.
        const dispose = async (id: string): Promise<boolean> => {
          if (!handles.has(id)) return false;
          await harness.disposeAgent(id).catch(() => {/* its log is deleted below */});
          return true;
        };
        // The session's agent first: disposing it cancels its delegations, whose children are disposed with it.
        let existed = await dispose(sessionId);
        const live = sessions.list().map((s) => s.header);
        const descendants = options.storage !== undefined
          ? await liveAndStoredDescendants(options.storage, sessionId, live)
          : subagentDescendants(sessionId, live);
        for (const id of descendants) {
          if (await dispose(id)) existed = true;
        }
        if (options.storage === undefined) return existed;
        // A disposed session's lease is given up by its last write: a delete right after may find it held for a
        // moment. A session still live here (not an agent this harness made) is not waited for.
        for (let attempt = 0;; attempt++) {
          try {
            return (await deleteSessionTree(options.storage, sessionId)) || existed;
          } catch (error) {
            const waiting = attempt < 40 && [sessionId, ...descendants].every((id) => sessions.get(id) === undefined);
            if (!HarnessError.isInstance(error, "SESSION_WRITER_BUSY") || !waiting) throw error;
            await new Promise((resolve) => setTimeout(resolve, 25));
          }
        }
      });
    },
    fork(source, boundary, childId) {
      return whileLive("fork a session", async () => {
        checkForkSource(source);
        const sessions = ctx.service("sessions");
        let child: Session;
        if (typeof source !== "string" || sessions.get(source) !== undefined) {
          child = sessions.fork(source, boundary, childId);
        } else {
          if (options.storage === undefined) {
            throw new HarnessError(
              "SESSION_NOT_FOUND",
              `Session "${source}" is not live and the harness has no storage`,
            );
          }
          const loaded = await options.storage.inspect(source);
          // Enter the stored log for the time of the fork only: the store's fork
          // rules (boundary, open turn, lineage) then apply unchanged.
          const stored = sessions.prepare(source, { seed: loaded.events, header: loaded.header });
          const detach = sessions.enter(stored);
          try {
            child = sessions.fork(stored, boundary ?? loaded.events.length - 1, childId);
          } finally {
            detach();
          }
        }
        if (options.storage !== undefined) {
          // Handed out once stored, as an agent's session is (see durableStart).
          try {
            await sessions.flush(child);
          } catch (error) {
            sessions.dispose(child);
            throw storageError(error);
          }
        }
        return child;
      });
    },
    dispose() {
      // Called from code a teardown of this harness runs (a plugin's undo, an agent's session/release listener), the
      // call would wait for a disposal that waits for it: it starts the disposal if none is under way, and settles at
      // once. Before a disposal, only code of an agent's teardown is such (the disposal waits for every agent): the
      // undo of a plugin disposed on its own is not waited for, and its call waits as any other does.
      if (disposal !== undefined ? calledFromTeardown(rootFiber) : calledFromAgentTeardown(rootFiber)) {
        if (disposal === undefined) {
          disposal = disposeAll();
          disposal.catch((error) => {
            if (!awaited) console.error("[@dsh/harness] disposing the harness failed (a teardown started it):", error);
          });
        }
        return Promise.resolve();
      }
      // One disposal: a second call (a signal handler's, then main's) settles with the first, as it does.
      awaited = true;
      return disposal ??= disposeAll();
    },
  };
  const rootFiber = fiberOf(ctx.raw)!;
  let disposal: Promise<void> | undefined;
  // Whether a call from outside the disposal got its promise (and so reports its failure).
  let awaited = false;
  async function disposeAll(): Promise<void> {
    disposed = true;
    // Everything is disposed even when a step fails (an agent's last write); then the failures are thrown.
    const failures: unknown[] = [];
    const attempt = async (step: () => Promise<void>) => {
      try {
        await step();
      } catch (error) {
        failures.push(error);
      }
    };
    for (const [id, handle] of [...handles].reverse()) {
      // One whose disposeAgent() began meanwhile: that call reports its failure (it is awaited with `leaving`).
      if (handles.get(id) !== handle) continue;
      await attempt(() => handle.dispose());
    }
    handles.clear();
    // Agents whose disposeAgent() is still under way: their failures are that call's to report. (With none, no
    // await: a creation started in the same tick still finds the services gone, as it did.)
    if (leaving.size > 0) await Promise.all(leaving);
    // Then every plugin, scope, listener and effect registered through `ctx`, the latest first: those added after
    // createHarness() returned, the plugins of the options, last the core (persistence, the sessions' store).
    failures.push(...await unwind(ctx));
    // Cordis cannot dispose its root: later registrations through `ctx` are refused here instead (CONTEXT_DISPOSED),
    // where they were accepted and never undone.
    closeRoot(ctx);
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, "Disposing the harness failed in several places");
  }
  const effective = options.config === undefined
    ? undefined
    : (await import("./_apply_config.ts")).effectiveConfig(options.config);
  const problem =
    hookProblem(effective?.hooks, ctx.get("hooks" as never), ctx.get("subprocess" as never) !== undefined) ??
      hookEnvProblem(effective?.hookBridge, ctx.get("hooks" as never));
  if (problem !== undefined) {
    await harness.dispose();
    throw problem;
  }
  return harness;
}

type HookEntries = Readonly<
  Record<
    string,
    | readonly { matcher?: string; hooks?: readonly { type?: string; command?: string; timeout?: number }[] }[]
    | undefined
  >
>;

/** Why the hooks configured or given cannot run as configured, once the plugins have started. */
function hookProblem(
  configured: HookEntries | undefined,
  service: unknown,
  subprocess: boolean,
): HarnessError | undefined {
  const entries = (table: HookEntries | undefined) =>
    Object.entries(table ?? {}).flatMap(([event, matchers]) =>
      (matchers ?? []).flatMap((m) => (m?.hooks ?? []).map((hook) => ({ event, matcher: m.matcher ?? "", hook })))
    );
  const wanted = entries(configured);
  const bridge = service as { table?: () => HookEntries } | undefined;
  if (wanted.length > 0 && bridge === undefined) {
    return new HarnessError(
      "HOOKS_NOT_INSTALLED",
      'The configuration has hooks but nothing runs them: add hookBridge({ hooks: config.hooks }) from "@dsh/harness/hooks" to the plugins',
    );
  }
  if (bridge === undefined) return undefined;
  const held = typeof bridge.table === "function" ? entries(bridge.table()) : undefined;
  // A bridge given other hooks than the configuration's would drop them without a word.
  const missing = held === undefined
    ? wanted[0]
    : wanted.find((w) =>
      !held.some((h) =>
        h.event === w.event && h.matcher === w.matcher && h.hook.type === w.hook.type &&
        h.hook.command === w.hook.command && h.hook.timeout === w.hook.timeout
      )
    );
  if (missing !== undefined) {
    return new HarnessError(
      "HOOKS_NOT_INSTALLED",
      `The configured ${missing.event} hook ${
        JSON.stringify(missing.hook.command)
      } is not among the hooks the hook bridge runs: give it the configuration's hooks, hookBridge({ hooks: config.hooks }) (with your own added to them)`,
      { details: { event: missing.event, matcher: missing.matcher, command: missing.hook.command } },
    );
  }
  // Without a subprocess service every command hook would answer HOOK_NO_SUBPROCESS, which fails open: a deny
  // hook that never runs.
  const command = (held ?? []).find((h) => h.hook.type === "command");
  if (command !== undefined && !subprocess) {
    return new HarnessError(
      "HOOKS_NO_SUBPROCESS",
      `The ${command.event} hook ${
        JSON.stringify(command.hook.command)
      } is a command, and nothing runs commands: add a subprocess service (capabilitiesPlugin with { subprocess: localSubprocess() }) to the plugins`,
      { details: { event: command.event, command: command.hook.command } },
    );
  }
  return undefined;
}

// `inheritEnv: false` is the bridge's empty list (it reports what it checked: `[]`), as the same choice.
const inheritedNames = (inheritEnv: unknown) => inheritEnv === false ? [] : inheritEnv;

/**
 * Why the hook bridge does not run its commands in the environment the configuration's `hookBridge` sets: a bridge
 * made without `...config.hookBridge` would give them its defaults without a word.
 */
function hookEnvProblem(
  configured: { readonly inheritEnv?: unknown; readonly env?: Readonly<Record<string, string>> } | undefined,
  service: unknown,
): HarnessError | undefined {
  if (configured === undefined || (configured.inheritEnv === undefined && configured.env === undefined)) return;
  // Without a bridge no command hook runs: there is no environment to get wrong.
  if (service === undefined) return undefined;
  const held = (service as { environment?: () => { inheritEnv: unknown; env: Readonly<Record<string, string>> } })
    .environment?.();
  const wrong = held === undefined ? "hookBridge" : configured.inheritEnv !== undefined &&
      JSON.stringify(inheritedNames(configured.inheritEnv)) !== JSON.stringify(inheritedNames(held.inheritEnv))
    ? "hookBridge.inheritEnv"
    : Object.entries(configured.env ?? {}).find(([name, value]) => held.env[name] !== value)?.[0];
  if (wrong === undefined) return undefined;
  const path = wrong.startsWith("hookBridge") ? wrong : `hookBridge.env.${wrong}`;
  return new HarnessError(
    "HOOKS_NOT_INSTALLED",
    `The configuration's ${path} is not what the hook bridge runs its commands with: give it the configuration's ` +
      "options, hookBridge({ hooks: config.hooks, ...config.hookBridge })",
    { details: { path } },
  );
}

type PluginHandle = ReturnType<HarnessCtx["plugin"]>;

// A fork's source is a live session or a session id; an agent (a common slip from JavaScript) says what to pass.
function checkForkSource(source: unknown): void {
  if (typeof source === "string" || source instanceof Session) return;
  const agent = typeof source === "object" && source !== null && (source as { session?: unknown }).session;
  throw new HarnessError(
    "INVALID_ARGS",
    agent instanceof Session
      ? "Fork a session, not an agent: pass agent.session (or its id)"
      : "Fork takes a live session or a session id",
  );
}

// Undo what started before `failure`; a second failure while undoing is reported, and the first one is thrown.
async function disposeAfterFailure(handle: PluginHandle, failure: unknown): Promise<void> {
  try {
    await handle.dispose();
  } catch (error) {
    console.error("[@dsh/harness] undoing a harness that failed to start failed too:", error, "\nafter:", failure);
  }
}

/**
 * A plugin of the options that failed to start, named: a `HarnessError` with the failure's code when it is one
 * (`PLUGIN_FAILED` otherwise) and its details, the plugin's name added, the failure as the cause.
 */
function pluginFailed(plugin: unknown, index: number, failure: unknown): HarnessError {
  const named = typeof plugin === "function"
    ? (plugin as { pluginName?: unknown }).pluginName ?? plugin.name
    : (plugin as { name?: unknown } | undefined)?.name;
  const name = typeof named === "string" && named !== "" ? named : `#${index + 1}`;
  const message = failure instanceof Error ? failure.message : String(failure);
  return new HarnessError(
    HarnessError.isInstance(failure) ? failure.code : "PLUGIN_FAILED",
    `Plugin "${name}" failed to start: ${message}`,
    { cause: failure, details: { ...(HarnessError.isInstance(failure) ? failure.details : {}), plugin: name } },
  );
}

/** With exactly one adapter and no `model`, that adapter's first model is the route (an unambiguous default). */
function soleAdapterRoute(adapters: readonly LlmAdapter[] | undefined): Partial<AgentOptions> | undefined {
  if (adapters?.length !== 1 || adapters[0].models.length === 0) return undefined;
  return { provider: adapters[0].provider, model: adapters[0].models[0].id };
}

/**
 * The default route from an explicit `model` over the configured one, as an agent's route over the default one
 * ({@linkcode overRoute}): field by field while it keeps the configured provider and model (`model: { temperature: 0 }`);
 * whole when it names another route, whose sampling settings (a reasoning effort, a token limit) are not the
 * configured route's to give.
 */
function explicitModel(
  configured: Partial<AgentOptions>,
  given: Partial<AgentOptions> | undefined,
): Partial<AgentOptions> {
  return given === undefined ? configured : overRoute(configured, given);
}

/** Fold `options.config` into the options: explicit options win over configured values. */
async function withConfig(options: CreateHarnessOptions): Promise<CreateHarnessOptions> {
  if (options.config === undefined) return options;
  const {
    adaptersFromConfig,
    checkRuleSubjects,
    configStorageKinds,
    defaultEnv,
    effectiveConfig,
    enabledTools,
    importPlugins,
    installPermissions,
    restrictTools,
    storageFromConfig,
  } = await import("./_apply_config.ts");
  const config = effectiveConfig(options.config);
  // An explicit adapter replaces the configured one of its provider, which is then not built (nor needs a factory).
  const explicit = new Set((options.adapters ?? []).map((a) => a.provider));
  const configured = adaptersFromConfig(config, options.adapterKinds, options.env ?? defaultEnv, explicit);
  const plugins = (await importPlugins(config.plugins)).map((p) => p as PluginEntry);
  const permissions: PluginEntry = Object.assign(
    (ctx: HarnessCtx) => installPermissions(ctx as unknown as HarnessContext, config),
    { pluginName: "config permissions" },
  );
  // Last, once every other plugin has registered its tools: the `tools` list holds for those too.
  const toolList: PluginEntry = Object.assign((ctx: HarnessCtx) => {
    checkRuleSubjects(ctx as unknown as HarnessContext, config);
    restrictTools(ctx as unknown as HarnessContext, config);
  }, { pluginName: "config tools" });
  return {
    ...options,
    adapters: [...configured.filter((a) => !explicit.has(a.provider)), ...(options.adapters ?? [])],
    model: explicitModel(config.model, options.model),
    tools: enabledTools(config, options.tools ?? []),
    storage: options.storage ??
      storageFromConfig(
        config,
        { ...configStorageKinds(options.config), ...options.storageKinds },
        options.env ?? defaultEnv,
      ),
    plugins: [permissions, ...plugins, ...(options.plugins ?? []), toolList],
    maxParallelToolCalls: options.maxParallelToolCalls ?? config.maxParallelToolCalls,
    maxSteps: options.maxSteps ?? config.maxSteps ?? undefined,
    invariants: options.invariants ?? config.invariants,
  };
}

export type {
  AdapterFactory,
  AdapterFactoryInput,
  ConfigInput,
  EnvReader,
  StorageFactory,
  StorageFactoryInput,
} from "./_apply_config.ts";
