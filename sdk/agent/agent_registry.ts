/**
 * `ctx.agents`: the registry of live agents, and the factory seam through
 * which agents are made. The registry itself has no loop: a plugin (the
 * default is the agent loop) installs a factory with `setFactory`.
 *
 * @module
 */

import type { HarnessContext } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { SessionEvent, SessionProfile } from "../session/mod.ts";
import type { Agent, AgentHandle, AgentOptions } from "./agent.ts";

/** Options of {@linkcode AgentRegistry.create}. */
export interface CreateAgentOptions extends Partial<AgentOptions> {
  /**
   * The agent and session id.
   *
   * @default {a generated id}
   */
  readonly id?: string;
  /**
   * Header fields of the new session (lineage of a child session: `parentSession`,
   * `origin`, `delegationDepth`, `agentPreset`, `cwd`).
   */
  readonly header?: Readonly<Record<string, unknown>>;
  /**
   * The session's own profile, stored in its header (`SessionHeader.profile`)
   * so that it is restored wherever the session resumes. It is recorded
   * only: apply its system text and tools in `setup` (the HTTP app does).
   */
  readonly profile?: SessionProfile;
  /**
   * Runs inside the creation transaction with the agent's scoped context:
   * register scoped tools, prompt sections and listeners here. A throw rolls
   * the creation back.
   */
  readonly setup?: (ctx: HarnessContext, agent: Agent) => void | Promise<void>;
}

/** Options of {@linkcode AgentRegistry.resume}. */
export interface ResumeAgentOptions extends Partial<AgentOptions> {
  /** The session to continue. */
  readonly sessionId: string;
  /** Its log, as loaded (and repaired) from storage. */
  readonly events: readonly SessionEvent[];
  /** Session metadata as stored (creation time, cwd, lineage). */
  readonly header?: Readonly<Record<string, unknown>>;
  /** As for {@linkcode CreateAgentOptions.setup}. */
  readonly setup?: (ctx: HarnessContext, agent: Agent) => void | Promise<void>;
}

/** Makes agents; installed by the agent loop plugin. */
export interface AgentFactory {
  /** Create an agent over a new session. */
  create(ownerCtx: HarnessContext, options: CreateAgentOptions): Promise<AgentHandle>;
  /** Create an agent over a loaded session. */
  resume(ownerCtx: HarnessContext, options: ResumeAgentOptions): Promise<AgentHandle>;
}

/**
 * The live agents of a harness, and the seam that makes new ones.
 *
 * @example
 * ```ts
 * import { AgentRegistry } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const registry = new AgentRegistry();
 * assert.deepEqual(registry.list(), []);
 * ```
 */
export class AgentRegistry {
  readonly #agents = new Map<string, Agent>();
  #factory: AgentFactory | undefined;

  /**
   * Install the factory.
   *
   * @param factory The factory.
   * @returns A function that uninstalls it.
   * @throws {HarnessError} `FACTORY_ALREADY_SET` when another factory is installed.
   */
  setFactory(factory: AgentFactory): () => void {
    if (this.#factory !== undefined) {
      throw new HarnessError("FACTORY_ALREADY_SET", "An agent factory is already installed");
    }
    this.#factory = factory;
    return () => {
      if (this.#factory === factory) this.#factory = undefined;
    };
  }

  /**
   * Create an agent through the installed factory.
   *
   * @param ownerCtx The context that owns the agent (its scope becomes the agent scope's parent).
   * @param options Route, id and setup.
   * @returns The handle; only its holder can dispose the agent.
   * @throws {HarnessError} `NO_AGENT_FACTORY` when no factory is installed.
   */
  create(ownerCtx: HarnessContext, options: CreateAgentOptions = {}): Promise<AgentHandle> {
    return this.#requireFactory().create(ownerCtx, options);
  }

  /**
   * Resume an agent over a loaded session.
   *
   * @param ownerCtx The owning context.
   * @param options The session id, its events and overrides.
   * @returns The handle.
   */
  resume(ownerCtx: HarnessContext, options: ResumeAgentOptions): Promise<AgentHandle> {
    return this.#requireFactory().resume(ownerCtx, options);
  }

  /**
   * Enter a live agent into the registry.
   *
   * @param agent The agent.
   * @returns A function that removes it.
   * @throws {HarnessError} `AGENT_ALREADY_EXISTS` when the id is taken.
   */
  enter(agent: Agent): () => void {
    if (this.#agents.has(agent.id)) {
      throw new HarnessError("AGENT_ALREADY_EXISTS", `Agent "${agent.id}" is already live`);
    }
    this.#agents.set(agent.id, agent);
    return () => {
      if (this.#agents.get(agent.id) === agent) this.#agents.delete(agent.id);
    };
  }

  /**
   * A live agent by id (the bare agent: disposing needs the handle).
   *
   * @param id The agent id.
   * @returns The agent, or `undefined`.
   */
  get(id: string): Agent | undefined {
    return this.#agents.get(id);
  }

  /**
   * The live agents, in creation order.
   *
   * @returns A new array.
   */
  list(): Agent[] {
    return [...this.#agents.values()];
  }

  #requireFactory(): AgentFactory {
    if (this.#factory === undefined) {
      throw new HarnessError("NO_AGENT_FACTORY", "No agent factory is installed: add the agent loop plugin");
    }
    return this.#factory;
  }
}
