// Internal: the sessions the app serves — live agents, agents resumed from
// storage on first use, forks, and the per-session profile (system text,
// tools, model route), which lives in the session header so that any
// instance resuming the session applies it.

import type { Agent, AgentOptions } from "../agent/agent.ts";
import type { AgentHandle } from "../agent/agent.ts";
import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { Harness, HarnessCtx } from "../harness.ts";
import type { SessionStorage } from "../persistence/session_storage.ts";
import type { SessionProfile } from "../session/session.ts";
import type { SessionEvent } from "../session/session_events.ts";
import { forkBoundary } from "../session/session_store.ts";
import { HttpProblem } from "./_problem.ts";
import { durableStart } from "../agent/_durable_start.ts";
import { writerLost } from "../persistence/_stored_prefix.ts";
import type { CreateSessionBody } from "./_body.ts";

function notFound(id: string): HttpProblem {
  return new HttpProblem(404, "SESSION_NOT_FOUND", `Session "${id}" does not exist`);
}

function alreadyExists(id: string, cause?: unknown): HttpProblem {
  return new HttpProblem(
    409,
    "SESSION_ALREADY_EXISTS",
    `Session "${id}" already exists, or another request is creating it`,
    { cause },
  );
}

/**
 * A session this app was creating under an id the client chose, refused because the id is taken meanwhile: another
 * request made it first (here: `SESSION_ALREADY_EXISTS`, `AGENT_ALREADY_EXISTS`), or another instance sharing the
 * storage holds its writer lease while it makes it (`SESSION_WRITER_BUSY`). One answer for all of them, the one the
 * check before the creation gives: the lease is how storage settles the race, not something the client asked for.
 */
function takenId(id: string, error: unknown): unknown {
  const taken = HarnessError.isInstance(error, "SESSION_ALREADY_EXISTS") ||
    HarnessError.isInstance(error, "AGENT_ALREADY_EXISTS") || HarnessError.isInstance(error, "SESSION_WRITER_BUSY");
  return taken && !(error instanceof HttpProblem) ? alreadyExists(id, error) : error;
}

/**
 * The session whose writer lease was lost, when `error` (or a cause of it, as for `SESSION_FLUSH_FAILED`) is
 * `SESSION_LEASE_LOST`.
 */
function leaseLostSession(error: unknown): string | undefined {
  let sessionId: string | undefined;
  for (let e = error, depth = 0; e !== undefined && e !== null && depth < 5; e = (e as Error).cause, depth++) {
    if (!HarnessError.isInstance(e)) return undefined;
    const id = e.details?.sessionId;
    if (typeof id === "string") sessionId ??= id;
    if (e.code === "SESSION_LEASE_LOST") return typeof id === "string" ? id : sessionId;
  }
  return undefined;
}

/**
 * Harnesses whose app keeps a live agent whose writer lost its lease (see SessionHost.evictAfter): the serverless
 * handler's, which disposes the harness after the request and answers for the agent's failed write itself.
 */
export const keepsLostWriters: WeakSet<Harness> = new WeakSet();

export class SessionHost {
  readonly #harness: Harness;
  readonly #ctx: HarnessCtx;
  readonly #storage: SessionStorage | undefined;
  /** Agents this app made outside `harness.createAgent` (forks): only their handles can dispose them. */
  readonly #handles = new Map<string, AgentHandle>();
  readonly #resuming = new Map<string, Promise<Agent>>();
  /** Live agents being let go of because their writer lost the lease (see evictAfter). */
  readonly #evicting = new Map<string, Promise<void>>();

  constructor(harness: Harness) {
    this.#harness = harness;
    this.#ctx = harness.ctx;
    this.#storage = harness.storage;
  }

  get storage(): SessionStorage | undefined {
    return this.#storage;
  }

  /** The live agent of `id`, if any. */
  live(id: string): Agent | undefined {
    return this.#ctx.service("agents").get(id);
  }

  /** Every live agent. */
  liveAgents(): Agent[] {
    return this.#ctx.service("agents").list();
  }

  /**
   * The live agent of `id` for a read, if any. One whose writer lost its lease (a write of it failed so, in the
   * background too) is let go first, as after a request that failed so (see evictAfter): it is no longer reported
   * live or running, and its events past what it stored are not served as stored ones; the read goes to storage.
   */
  async readable(id: string): Promise<Agent | undefined> {
    await this.#evicting.get(id);
    const agent = this.live(id);
    if (agent === undefined || !writerLost(agent.session) || keepsLostWriters.has(this.#harness)) return agent;
    await this.#evict(id);
    return this.live(id);
  }

  /** Every live agent for a read: those whose writer lost its lease are let go first (see readable). */
  async readableAgents(): Promise<Agent[]> {
    const lost = this.liveAgents().filter((a) => writerLost(a.session));
    if (lost.length > 0 && !keepsLostWriters.has(this.#harness)) await Promise.all(lost.map((a) => this.#evict(a.id)));
    return this.liveAgents();
  }

  /** The live agent of `id`, resuming it from storage when it is only stored. */
  async agent(id: string): Promise<Agent> {
    await this.#evicting.get(id);
    const live = this.live(id);
    if (live !== undefined) return live;
    const pending = this.#resuming.get(id);
    if (pending !== undefined) return await pending;
    if (this.#storage === undefined) throw notFound(id);
    const resuming = (async () => {
      try {
        return await this.#harness.resumeAgent(id, {
          setup: (ctx, agent) => this.#applyProfile(ctx, agent.session.header.profile),
        });
      } catch (error) {
        if (HarnessError.isInstance(error, "SESSION_NOT_FOUND")) throw notFound(id);
        throw error;
      }
    })();
    this.#resuming.set(id, resuming);
    try {
      return await resuming;
    } finally {
      this.#resuming.delete(id);
    }
  }

  /** Create an agent over a new session. */
  async create(body: CreateSessionBody): Promise<Agent> {
    const tools = this.#ctx.service("tools");
    for (const name of body.tools ?? []) {
      if (tools.get(name) === undefined) {
        throw new HttpProblem(422, "UNKNOWN_TOOL", `No tool named "${name}" is registered`);
      }
    }
    if (body.id !== undefined && (this.live(body.id) !== undefined || await this.#stored(body.id))) {
      throw alreadyExists(body.id);
    }
    const { id, ...given } = body;
    const profile = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as SessionProfile;
    const { system: _system, tools: _tools, ...route } = profile;
    // A provider no adapter serves is named as such, before the route is resolved: an agent that names another
    // provider than the default takes none of the default's fields, the model included, and would be refused for
    // the model it lacks.
    const provider = (route as Partial<AgentOptions>).provider;
    if (provider !== undefined && !this.#ctx.service("llm").listProviders().includes(provider)) {
      throw new HttpProblem(422, "UNKNOWN_PROVIDER", `No adapter serves provider "${provider}"`);
    }
    try {
      return await this.#harness.createAgent({
        ...(id !== undefined ? { id } : {}),
        ...(route as Partial<AgentOptions>),
        ...(Object.keys(profile).length > 0 ? { profile } : {}),
        setup: (ctx, made) => {
          // Before the session is announced: a refused route leaves nothing behind, in memory or in storage.
          this.#checkRoute(made.options);
          this.#applyProfile(ctx, profile);
        },
      });
    } catch (error) {
      // Another creation of the id won the race since the check above (the agent made here is gone: createAgent
      // disposes one that could not take its lease or be stored).
      throw id !== undefined ? takenId(id, error) : error;
    }
  }

  /**
   * Fork a live session into a new live agent: the prefix is checked with the
   * store's rules (`forkBoundary`) and handed to the registry as a seed; the
   * handle stays with this host, which owns the agents it serves.
   */
  async fork(source: Agent, boundary: number | undefined, childId: string | undefined): Promise<Agent> {
    const events = source.session.events;
    let end: number;
    try {
      end = forkBoundary(source.id, events, boundary);
    } catch (error) {
      if (HarnessError.isInstance(error, "OPEN_TURN")) throw new HttpProblem(409, "OPEN_TURN", error.message);
      if (HarnessError.isInstance(error, "OPEN_COMPACTION")) {
        throw new HttpProblem(409, "OPEN_COMPACTION", error.message);
      }
      if (HarnessError.isInstance(error, "INVALID_BOUNDARY")) {
        throw new HttpProblem(422, "INVALID_BOUNDARY", error.message);
      }
      throw error;
    }
    // A new id from the harness's source, as harness.forkAgent() names its forks.
    const id = childId ?? this.#ctx.service("sessions").newId();
    if (this.live(id) !== undefined || this.#ctx.service("sessions").get(id) !== undefined || await this.#stored(id)) {
      throw alreadyExists(id);
    }
    try {
      return await this.#startFork(source, id, events.slice(0, end + 1));
    } catch (error) {
      // As for create(): a fork to the same id made first elsewhere.
      throw childId !== undefined ? takenId(id, error) : error;
    }
  }

  /** Start the fork `id` of `source` over its prefix `seed`, handed out once stored. */
  async #startFork(source: Agent, id: string, seed: readonly SessionEvent[]): Promise<Agent> {
    const profile = source.session.header.profile;
    const { provider, model, reasoningEffort, temperature, maxTokens, stop } = source.options;
    const cwd = source.session.header.cwd;
    const handle = await this.#ctx.service("agents").resume(this.#ctx as unknown as HarnessContext, {
      sessionId: id,
      events: seed,
      header: {
        parentSession: source.id,
        seedLength: seed.length,
        ...(cwd !== undefined ? { cwd } : {}),
        ...(profile !== undefined ? { profile } : {}),
      },
      provider,
      model,
      reasoningEffort,
      temperature,
      maxTokens,
      stop,
      setup: (ctx) => this.#applyProfile(ctx, profile),
    });
    // A 201 for the fork means it is on storage.
    if (this.#storage !== undefined) await durableStart(handle);
    this.#handles.set(id, handle);
    return handle.agent;
  }

  /**
   * Dispose the live agent of `id` and delete its stored log, with its subagent descendants (`harness.deleteSession`:
   * their live agents are disposed, their logs deleted before their parent's); `false` when nothing existed. A failed
   * last write of a disposed agent does not fail the delete: the log it would have gone to is deleted.
   */
  async remove(id: string): Promise<boolean> {
    await this.#evicting.get(id);
    // A resume of this session under way here holds its lease: the delete waits for it (whatever its outcome), then
    // disposes the agent it made. Before, the delete found the lease held and answered 409 SESSION_WRITER_BUSY.
    await this.#resuming.get(id)?.catch(() => {});
    const existed = await this.#disposeLive(id).catch(() => true /* the log is deleted below */);
    return (await this.#harness.deleteSession(id)) || existed;
  }

  /**
   * After a request failed: when it failed because the writer of a live session lost its lease (the database was
   * unreachable for longer than the lease, or another instance took the session over), that agent can never write
   * again. It is disposed (its last write fails the same way and is dropped: the request that failed reported it),
   * so the session's next request resumes it from storage, taking the lease anew.
   */
  async evictAfter(error: unknown): Promise<void> {
    const id = leaseLostSession(error);
    if (id === undefined || this.live(id) === undefined || keepsLostWriters.has(this.#harness)) return;
    await this.#evict(id);
  }

  /** Let the live agent of `id` go, its last write dropped (it was refused as its earlier ones were). */
  async #evict(id: string): Promise<void> {
    let evicting = this.#evicting.get(id);
    if (evicting === undefined) {
      evicting = this.#disposeLive(id)
        .then(() => {}, () => {/* its last write: refused as the request's was */})
        .finally(() => this.#evicting.delete(id));
      this.#evicting.set(id, evicting);
    }
    await evicting;
  }

  /** Dispose the live agent of `id`; `false` when it had none. */
  async #disposeLive(id: string): Promise<boolean> {
    const handle = this.#handles.get(id);
    if (handle !== undefined) {
      this.#handles.delete(id);
      await handle.dispose();
      return true;
    }
    if (this.live(id) === undefined) return false;
    await this.#harness.disposeAgent(id);
    return true;
  }

  /** The stored session ids that have no live agent. */
  async storedOnly(): Promise<{ id: string; createdAt: number; parentSession?: string }[]> {
    if (this.#storage === undefined) return [];
    const headers = await this.#storage.list();
    return headers.filter((h) => this.live(h.id) === undefined).map((h) => ({
      id: h.id,
      createdAt: h.createdAt,
      ...(h.parentSession !== undefined ? { parentSession: h.parentSession } : {}),
    }));
  }

  async #stored(id: string): Promise<boolean> {
    return this.#storage !== undefined && (await this.#storage.stat(id)) !== undefined;
  }

  /** Refuse a provider no adapter serves, or a model its adapter does not list (422). */
  #checkRoute(route: AgentOptions): void {
    try {
      this.#ctx.service("llm").resolveModelInfo(route.provider, route.model);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === "NO_ADAPTER") {
        throw new HttpProblem(422, "UNKNOWN_PROVIDER", `No adapter serves provider "${route.provider}"`);
      }
      if (code === "UNSUPPORTED_MODEL") {
        throw new HttpProblem(
          422,
          "UNKNOWN_MODEL",
          `Provider "${route.provider}" does not serve model "${route.model}"`,
        );
      }
      throw error;
    }
  }

  #applyProfile(ctx: HarnessContext, profile: SessionProfile | undefined): void {
    if (profile === undefined) return;
    const scoped = ctx as unknown as HarnessCtx;
    if (profile.system !== undefined && profile.system !== "") {
      // A client's text is taken literally: sections are prompt templates, and its `{{` would otherwise be read as a
      // variable reference (PROMPT_TEMPLATE_INVALID on every turn of the session, for good).
      const text = profile.system.replaceAll("{{", "\\{{");
      scoped.service("systemPrompt").section({ name: "http-session", order: 50, text }, scoped);
    }
    if (profile.tools !== undefined) scoped.service("tools").restrict({ allow: profile.tools }, scoped);
  }
}
