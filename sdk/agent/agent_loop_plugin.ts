/**
 * The agent loop plugin: installs the loop as `ctx.agents`' factory. Creation
 * is a transaction: scope → session → agent → setup → registry entries →
 * `session/created` → `agent/created` → `agent/session-start`; any failure
 * rolls back what was done, and every announced creation is paired with its
 * disposal.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import { checkSettings } from "../llm/_check_call_config.ts";
import { createScope } from "../kernel/scope.ts";
import { calledFromTeardown, fiberOf, runForTeardown, tearingDownAgent } from "../kernel/_teardown_calls.ts";
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from "../llm/retry_policy.ts";
import type { Session } from "../session/session.ts";
import type { EpochHeader } from "../session/session_events.ts";
import type { SessionEvents, SessionStore } from "../session/session_store.ts";
import type { AgentHandle, AgentOptions } from "./agent.ts";
import type { AgentFactory, AgentRegistry, CreateAgentOptions, ResumeAgentOptions } from "./agent_registry.ts";
import { LoopAgent, type LoopContext } from "./agent_loop.ts";
import { isRouteKey, overRoute } from "./_route.ts";
import { flushWithRetries, startFailed } from "./_retry_flush.ts";
import { wasAbandoned } from "../persistence/_stored_prefix.ts";

/** Options of {@linkcode agentLoopPlugin}. */
export interface AgentLoopOptions {
  /** The route used when an agent names none. */
  readonly defaultModel?: Partial<AgentOptions>;
  /**
   * The most tool calls of one step that run at once.
   *
   * @default {10}
   */
  readonly maxParallelToolCalls?: number;
  /** The most model steps of one turn; past it the turn ends `blocked`. @default {unbounded} */
  readonly maxSteps?: number;
  /** @default {DEFAULT_RETRY_POLICY} */
  readonly retryPolicy?: RetryPolicy;
  /**
   * Check every request against the log's derivation (costs a full fold per request).
   *
   * @default {true}
   */
  readonly invariants?: boolean;
  /** @default {Date.now} */
  readonly now?: () => number;
  /** @default {crypto.randomUUID} */
  readonly newId?: () => string;
  /** Sleep used between retries. @default {a timer that honours the signal} */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

interface LoopPluginServices {
  agents: AgentRegistry;
  sessions: SessionStore;
}

// The agent's route: its own over the harness's default one, as `overRoute` combines them (an agent that names
// another provider or model takes none of the default's sampling settings).
function resolveRoute(defaults: Partial<AgentOptions> | undefined, options: Partial<AgentOptions>): AgentOptions {
  const merged: Partial<AgentOptions> = overRoute(defaults, options);
  for (const [key, value] of Object.entries(options)) {
    if (
      value !== undefined && key !== "id" && key !== "setup" && key !== "sessionId" && key !== "events" &&
      key !== "header" && !isRouteKey(key)
    ) {
      (merged as Record<string, unknown>)[key] = value;
    }
  }
  if (typeof merged.provider !== "string" || typeof merged.model !== "string") {
    throw new HarnessError(
      "INVALID_ARGS",
      typeof merged.provider === "string" && merged.provider !== defaults?.provider
        ? `Cannot create an agent on provider "${merged.provider}" without a model (the default model is another provider's)`
        : "Cannot create an agent without a provider and a model (set a default model)",
    );
  }
  return merged as AgentOptions;
}

/**
 * Build the loop factory over a context that provides `agents`, `sessions`,
 * `llm`, `tools` and `systemPrompt`.
 *
 * @param ctx The context the plugin runs on.
 * @param options Defaults for the agents it makes.
 * @returns The factory.
 */
export function createLoopFactory(ctx: HarnessContext, options: AgentLoopOptions = {}): AgentFactory {
  const now = options.now ?? Date.now;
  const newId = options.newId ?? (() => crypto.randomUUID());
  const services = ctx as unknown as HarnessContext<Record<string, never>, LoopPluginServices>;

  async function build(
    ownerCtx: HarnessContext,
    id: string,
    route: AgentOptions,
    makeSession: (scopeCtx: HarnessContext) => Session,
    origin: "create" | "resume",
    setup: CreateAgentOptions["setup"],
  ): Promise<AgentHandle> {
    const sessions = services.service("sessions");
    const registry = services.service("agents");
    if (sessions.get(id) !== undefined || registry.get(id) !== undefined) {
      throw new HarnessError("SESSION_ALREADY_EXISTS", `Session "${id}" is already live`, { details: { id } });
    }
    // The registrations below run in a job of their own, not under the caller's frames. Cordis builds `Error`
    // objects while it registers (a scope, its fiber, effects), and Deno captures a detailed stack for every error:
    // the first one built with a large function on the stack makes V8 re-parse that function for its source
    // positions. A bundled program's top level, which calls `createAgent()`, is one function the size of the
    // bundle: 20–25 ms of CPU (bench/PROFILE.md, "Cold start, fifth pass").
    await undefined;
    const scope = createScope(ownerCtx, id);
    // Undoing a creation that failed: a failure of the scope's teardown is written out, the creation's is thrown.
    const undo: (() => void | Promise<void>)[] = [() =>
      scope.dispose().catch((error) => {
        console.error("[@dsh/harness] undoing an agent creation that failed failed too:", error);
      })];
    const rollback = async () => {
      for (const step of undo.reverse()) await step();
    };
    let agent: LoopAgent;
    let session: Session;
    let detachSession: () => void = () => {};
    let detachAgent: () => void = () => {};
    try {
      session = makeSession(scope.ctx);
      agent = new LoopAgent({
        ctx: scope.ctx as unknown as LoopContext,
        session,
        options: route,
        origin,
        now,
        newId,
        maxParallelToolCalls: options.maxParallelToolCalls ?? 10,
        maxSteps: options.maxSteps ?? Infinity,
        retryPolicy: options.retryPolicy ?? DEFAULT_RETRY_POLICY,
        invariants: options.invariants ?? true,
        sleep: options.sleep,
      });
      const a = agent;
      undo.push(() => a.stop());
      // The agent hears its own session directly: a kernel listener per agent
      // would make every appended event cost O(live agents).
      session.observe((event) => a.publish(event));
      await setup?.(scope.ctx, agent);
      detachSession = sessions.enter(session);
      undo.push(detachSession);
      detachAgent = registry.enter(agent);
      undo.push(detachAgent);
      const s = session;
      sessions.announce(s);
      undo.push(() => ctx.emit("session/disposed" as never, s as never));
      (ctx as unknown as LoopContext).emit("agent/created", agent);
      undo.push(() => (ctx as unknown as LoopContext).emit("agent/disposed", a));
      (ctx as unknown as LoopContext).emit("agent/session-start", agent, origin);
    } catch (error) {
      await rollback();
      throw error;
    }
    // Teardown, in order: the loop stops (closing its turn), the agent leaves the
    // registry, durable listeners finish and release the session (persistence
    // flushes and gives up its writer lease), the session leaves the store, and
    // the scope unwinds every scoped registration. A failed release (the
    // session's last write) is emitted as `agent/error`, and `dispose()`
    // rejects with it once every later step has run.
    const a = agent;
    const s = session;
    const teardown = async () => {
      await a.stop();
      // The session's last write, tried again when it fails for a moment, as `agent.flushed()` does: the release
      // below wrote it once, so a write that failed for a moment lost the session's last events (a server that
      // stopped during a brief storage outage), where a flush a moment later would have stored them. What is still
      // not written then is written (or refused again) by the release, whose failure is the one reported.
      // Not for a session whose start already waited out these retries and failed (the release still writes once),
      // nor for one abandoned before it was used (its log is deleted at release: a write now would be thrown away).
      if (!startFailed(s) && !wasAbandoned(s)) await flushWithRetries(() => sessions.flush(s)).catch(() => {});
      detachAgent();
      (ctx as unknown as LoopContext).emit("agent/disposed", a);
      let released: { error: unknown } | undefined;
      try {
        // The listeners run for this teardown: a dispose() of the agent or its harness they call is re-entrant.
        await runForTeardown(
          scope.ctx.raw,
          () => (scope.ctx as unknown as HarnessContext<SessionEvents>).parallel("session/release", s),
        );
      } catch (error) {
        (ctx as unknown as LoopContext).emit("agent/error", a, error);
        // The kernel gathers the listeners' failures: one is thrown as itself.
        released = { error: error instanceof AggregateError && error.errors.length === 1 ? error.errors[0] : error };
      }
      detachSession();
      ctx.emit("session/disposed" as never, s as never);
      // The scope's undo functions that failed (a plugin of the agent's whose teardown threw) are reported too.
      const undone = await scope.dispose().then(() => undefined, (error: unknown) => ({ error }));
      if (released !== undefined && undone !== undefined) {
        throw new AggregateError([released.error, undone.error], `Disposing agent "${a.id}" failed in several places`);
      }
      if (released !== undefined) throw released.error;
      if (undone !== undefined) throw undone.error;
    };
    let disposing: Promise<void> | undefined;
    const fiber = fiberOf(scope.ctx.raw)!;
    return {
      agent,
      // One teardown, every call settling with it; but a call from code the teardown runs (an undo of the agent's
      // scope, a session/release listener) would wait for itself: it settles at once (see AgentHandle.dispose).
      dispose: () =>
        disposing !== undefined && calledFromTeardown(fiber)
          ? Promise.resolve()
          : (disposing ??= tearingDownAgent(fiber, teardown)),
    };
  }

  return {
    create(ownerCtx, createOptions) {
      const route = resolveRoute(options.defaultModel, createOptions);
      // Refused where it is given rather than at the first request (a resumed route is the log's, checked per call).
      checkSettings(route, "Agent options");
      const id = createOptions.id ?? newId();
      return build(
        ownerCtx,
        id,
        route,
        (scopeCtx) =>
          services.service("sessions").prepare(id, {
            ctx: scopeCtx,
            now,
            ...(createOptions.header !== undefined ? { header: createOptions.header } : {}),
            ...(createOptions.profile !== undefined ? { profile: createOptions.profile } : {}),
          }),
        "create",
        createOptions.setup,
      );
    },
    resume(ownerCtx, resumeOptions) {
      const route = resolveRoute(options.defaultModel, routeFromLog(resumeOptions));
      return build(
        ownerCtx,
        resumeOptions.sessionId,
        route,
        (scopeCtx) =>
          services.service("sessions").prepare(resumeOptions.sessionId, {
            ctx: scopeCtx,
            now,
            seed: resumeOptions.events,
            header: resumeOptions.header,
          }),
        "resume",
        resumeOptions.setup,
      );
    },
  };
}

/**
 * The route a resumed agent keeps: the last recorded request header's, else
 * the one in the session's stored profile, unless overridden. The header's
 * fields the adapter filled in (its `adapterDefaults`) are not kept: they were
 * not chosen, and the adapter now serving the route fills them in again.
 */
function routeFromLog(options: ResumeAgentOptions): Partial<AgentOptions> {
  const profile = (options.header?.profile ?? {}) as Partial<AgentOptions>;
  let recorded: Partial<AgentOptions> = {};
  for (const key of ["provider", "model", "reasoningEffort", "temperature", "maxTokens"] as const) {
    if (profile[key] !== undefined) (recorded as Record<string, unknown>)[key] = profile[key];
  }
  let last: EpochHeader | undefined;
  for (const event of options.events) {
    if (event.type === "request/header") last = event.data.header;
  }
  if (last !== undefined) {
    const { provider, model, reasoningEffort, temperature, maxTokens, stop } = last.config;
    const filled = last.adapterDefaults;
    recorded = {
      provider,
      model,
      reasoningEffort: filled?.reasoningEffort === true ? undefined : reasoningEffort,
      temperature,
      maxTokens: filled?.maxTokens === true ? undefined : maxTokens,
      stop,
    };
  }
  const { sessionId: _id, events: _events, header: _header, setup: _setup, ...overrides } = options;
  // The overrides over the recorded route as over the harness's default one: whole when they name another route.
  const others = Object.entries(overrides).filter(([key, value]) => value !== undefined && !isRouteKey(key));
  return { ...Object.fromEntries(others), ...overRoute(recorded, overrides) };
}

/**
 * The plugin that installs the agent loop as the agent factory. It needs the
 * `agents`, `sessions`, `llm`, `tools` and `systemPrompt` services.
 *
 * @param ctx The plugin context.
 * @param options Loop defaults.
 */
export function agentLoopPlugin(ctx: HarnessContext, options: AgentLoopOptions = {}): void {
  const registry = (ctx as unknown as HarnessContext<Record<string, never>, LoopPluginServices>).service("agents");
  const uninstall = registry.setFactory(createLoopFactory(ctx, options));
  ctx.effect(() => uninstall, "agent-loop factory");
}
