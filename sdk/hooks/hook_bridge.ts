/**
 * `hookBridge()`: runs hooks written for Claude Code's protocol at the
 * harness's extension points.
 *
 * A little over the house limit on purpose: one plugin wires all five hook
 * events to the harness's events, sharing one invocation and logging path;
 * the table's check is in `_check_hook_table.ts`, the running of one hook in
 * `_run_hook.ts` and the types in `hook_definition.ts`.
 *
 * @module
 */

import { HarnessError } from "../kernel/harness_error.ts";
import type { HarnessContext, HarnessPlugin } from "../kernel/harness_context.ts";
import type { SystemMessage, UserMessage } from "../llm/messages.ts";
import type { HookEventName } from "../session/session_events.ts";
import type { Session } from "../session/session.ts";
import type { SessionStore } from "../session/session_store.ts";
import { type SessionProjections, turnBoundary } from "../projections/mod.ts";
import type { ToolEvents } from "../tools/tool_events.ts";
import type { AgentEvents } from "../agent/agent_events.ts";
import type { Agent } from "../agent/agent.ts";
import type { SubprocessService } from "../capabilities/subprocess/subprocess_service.ts";
import type { HooksConfig } from "../config/harness_config.ts";
import type { HookInput, HookTable, HookVerdict } from "./hook_definition.ts";
import { hookLabel, runHook } from "./_run_hook.ts";
import { checkHookTable, matcherPattern } from "./_check_hook_table.ts";
import { isDefaultAllow, isDefaultAsk } from "../tools/_default_decision.ts";
import { SHELL_ENV } from "../capabilities/shell/bash_shell.ts";
import { checkEnv, checkEnvNames, overlayEnv, pickEnv } from "../capabilities/subprocess/_host_env.ts";

/** One finished hook invocation, as `hooks/result` reports it. */
export interface HookResultInfo {
  readonly event: HookEventName;
  /** The session the hook ran for. */
  readonly sessionId: string;
  /** Joins the `hook/invoked` and `hook/result` events (absent when nothing was logged: SessionStart, or outside a turn). */
  readonly handlerId?: string;
  /** The hook's command, or `function:<name>`. */
  readonly hook: string;
  readonly verdict: HookVerdict;
}

/** The events of the hook bridge. */
export interface HookEvents {
  /** A hook finished (every invocation, SessionStart and a hook stopped by its signal, `HOOK_ABORTED`, included). */
  "hooks/result": (info: HookResultInfo) => void;
}

/** Options of {@linkcode hookBridge}. */
export interface HookBridgeOptions {
  /** The hooks: a configuration's `hooks` (commands), possibly with function hooks. */
  readonly hooks?: HooksConfig | HookTable;
  /**
   * How many times Stop hooks may keep one turn going: a non-negative
   * integer (else `INVALID_ARGS`).
   *
   * @default {8}
   */
  readonly maxStopContinuations?: number;
  /**
   * What a PreToolUse hook that fails (times out, crashes, answers with
   * output that cannot be read, `HOOK_BAD_OUTPUT`, or stdout past the cap)
   * decides: `"ignore"` goes on as
   * if it had said nothing (fail open, as Claude Code does), `"deny"` denies
   * the call (fail closed). The model writes the hook's input, so a hook that
   * guards calls can be made to fail by it (a huge argument the hook echoes
   * past the output cap, an input that makes it crash): use `"deny"` when a
   * PreToolUse hook is a security boundary.
   *
   * @default {"ignore"}
   */
  readonly preToolUseErrors?: "ignore" | "deny";
  /**
   * Which environment variables of the host process command hooks get: by default only `SHELL_ENV` (of
   * `@dsh/harness/tools`, the ones `bashShell` passes: `PATH`, `HOME`, the user, the locale, the terminal, the time
   * zone, the temporary directory and Windows' system variables), none that holds a credential, since a hook command
   * is a program like any other and need not see the host's provider API keys, tokens or database URLs. A list
   * names the ones to pass (`[...SHELL_ENV, "SSH_AUTH_SOCK"]`; a name, or a prefix ending with `*`; on Windows in any
   * case); `false` passes none. The bridge picks them from this process at each invocation and runs the command with
   * the subprocess service's `inheritEnv: false`, those variables (with `env`) being its whole environment, so every
   * provider gives the command that set and no more (one that runs commands elsewhere, a container, gets the picked
   * variables of this process). `true` leaves the environment to the provider (`inheritEnv: true`: for
   * `localSubprocess`, the whole of this process's, as Claude Code gives its hooks). The hook protocol passes its
   * input on stdin, so no variable of its own is set. Function hooks run in this process and are not concerned.
   *
   * @default {SHELL_ENV}
   */
  readonly inheritEnv?: boolean | readonly string[];
  /**
   * Variables set for every command hook, over the inherited ones (names non-empty, without `=` or NUL; values
   * strings without NUL; on Windows one replaces an inherited variable of any case).
   */
  readonly env?: Readonly<Record<string, string>>;
}

/** The service the hook bridge provides as `ctx.hooks`. */
export interface HookBridgeService {
  /** The events that have at least one hook. */
  events(): HookEventName[];
  /**
   * The hooks the bridge runs (a frozen copy of those it was given): createHarness checks
   * that a configuration's `hooks` are among them.
   */
  table(): HookTable;
  /**
   * The command hooks' environment options as the bridge checked them: `inheritEnv` (the default `SHELL_ENV` when
   * none was given) and `env` (empty when none): createHarness checks that a configuration's `hookBridge` is in them.
   */
  environment(): { readonly inheritEnv: boolean | readonly string[]; readonly env: Readonly<Record<string, string>> };
}

interface Services {
  sessions: SessionStore;
  sessionProjections: SessionProjections;
  subprocess: SubprocessService;
  hooks: HookBridgeService;
}

type Ctx = HarnessContext<ToolEvents & AgentEvents & HookEvents, Services>;

/** Whether a matcher (its compiled pattern: undefined matches all) takes the subject (none: every matcher does). */
function matches(pattern: RegExp | undefined, subject: string | undefined): boolean {
  return pattern === undefined || subject === undefined || pattern.test(subject);
}

function textOf(message: UserMessage | SystemMessage): string {
  return message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

/**
 * A hook's context for the model: a plugin-sourced system message, logged as
 * `system/message` where it enters (model-visible context the harness adds,
 * like prompt contexts), not as something the user said.
 */
function contextMessage(id: string, text: string, event: HookEventName): SystemMessage {
  return {
    id,
    role: "system",
    content: [{ type: "text", text }],
    source: { kind: "plugin", plugin: `hooks:${event}`, form: "notice" },
  };
}

/** A PostToolUse context, in the shape tool results carry (the loop logs a text context as `system/message`). */
function toolContext(id: string, text: string): UserMessage {
  return { ...contextMessage(id, text, "PostToolUse"), role: "user" };
}

/** Context worth entering: a non-empty text (a system message holds non-empty text). */
const hasText = (text: string | undefined): text is string => text !== undefined && text.trim() !== "";

/**
 * The hook bridge plugin. Hooks are configured per event with a matcher and a
 * command (run by `sh -c` through `ctx.subprocess`, the event as JSON on
 * stdin, with the host's ordinary variables only, `SHELL_ENV`, not its API
 * keys, unless `inheritEnv` says otherwise) or an in-process function. The protocol is Claude Code's: exit 0
 * goes on (JSON on stdout may decide `allow` / `deny` / `ask`, add
 * `additionalContext`, or rewrite the tool input with `updatedInput`), exit 2
 * blocks with stderr as the reason, any other exit is a logged error.
 *
 * Mapping: PreToolUse → `tools/pre-execute`, combined with the listeners
 * registered after the bridge as Claude Code combines a hook with its
 * permission rules: a hook's deny (or `continue: false`) decides at once; any
 * other verdict runs the later listeners (`next()`), whose deny wins; a hook's
 * `ask` stays an ask; a hook's `allow` skips only the default ask of a `write`
 * tool (the permission prompt), not a later listener's own ask (an ask rule).
 * A hook's `updatedInput` is carried into the decision (over a later
 * listener's rewrite); the later listeners judge the call as the model made it.
 * PostToolUse → `tools/post-execute`
 * (block, or context for the next step); UserPromptSubmit → `agent/pre-step`
 * (block the turn, or add context to the step); Stop → `agent/turn-stopping`
 * (block = keep the turn going with the reason as input); SessionStart → its
 * context waits in the inbox for the first turn. A subagent's session (header
 * `origin: "subagent"`) runs only PreToolUse and PostToolUse hooks: its
 * prompt is its parent model's task and its turn ends into that task, and no
 * person started it (as in Claude Code, where a subagent's end is the
 * separate SubagentStop event, which this bridge does not have). Hook context (and a Stop
 * hook's reason) reaches the model as a system message, logged as
 * `system/message` where it enters, never as user input; its id is made
 * from the session, the handler and, where no handler id names it
 * (SessionStart, a call outside a turn), a new id from the harness's id
 * source (`ctx.sessions.newId()`), so deterministic ids give deterministic logs. `continue: false`
 * cancels the turn with cause `hook` from PreToolUse, PostToolUse and
 * UserPromptSubmit; a Stop turn ends as it was about to (`completed`); SessionStart
 * ignores it (see `HookOutput.continue`).
 *
 * Logging: each invocation inside a turn logs `hook/invoked`, then
 * `hook/result` (joined by `handlerId`) when it answers; a hook stopped by its
 * turn's cancellation, or answering after its turn ended, leaves its
 * `hook/invoked` without a `hook/result`. SessionStart hooks run outside any
 * turn and log neither; every answer (SessionStart's and a stopped hook's
 * `HOOK_ABORTED` included) is emitted as `hooks/result`. Timeouts (`HOOK_TIMEOUT`), failing
 * hooks (`HOOK_FAILED`), malformed output (`HOOK_BAD_OUTPUT`: JSON that does
 * not parse; an unknown `decision`, `permissionDecision` or a `continue` that
 * is not a boolean; and for PreToolUse, PostToolUse and Stop, stdout that is
 * not one JSON object, such as text before the JSON, which Claude Code only
 * shows in its transcript; plain text is context for UserPromptSubmit and
 * SessionStart), stdout past
 * 256 KB (`HOOK_OUTPUT_TOO_LARGE`: a cut answer is not read) and unstartable
 * commands (`HOOK_SPAWN_FAILED`) are logged outcomes that never break the turn:
 * the turn goes on as if the hook had said nothing, so a PreToolUse hook whose
 * deny cannot be read does not deny (errors fail open). What could never run
 * is refused by createHarness instead: command hooks with no `ctx.subprocess`
 * once the plugins have started (`HOOKS_NO_SUBPROCESS`), and a configuration's
 * `hooks` that the bridge does not hold, or a `hookBridge` (`inheritEnv`, `env`)
 * it was not given (`HOOKS_NOT_INSTALLED`, `details.path` naming the field).
 *
 * @param options The hooks (e.g. `config.hooks`), the Stop limit and the command environment (from a configuration
 *   file, `...config.hookBridge`: its `inheritEnv` and `env`, checked there as here).
 * @returns The plugin.
 * @throws {HarnessError} `INVALID_ARGS` for a hook table the configuration's `hooks` schema would refuse (an
 *   unknown event or field, a matcher that is not a regular expression, a hook `timeout` under 0.001 (1 ms) or over
 *   3600 seconds), a hook that is neither a command (`command`: a non-empty string) nor a function (`name`, `run`),
 *   and a `maxStopContinuations` that is not a non-negative integer (`details.path` names the first wrong field of
 *   the table); an `inheritEnv` that is neither a boolean nor a list of names, and an `env` with a name or value no
 *   process can take.
 *
 * @example A function hook that denies a tool
 * ```ts
 * import { createHarness, defineTool } from "@dsh/harness";
 * import { hookBridge } from "@dsh/harness/hooks";
 * import assert from "node:assert/strict";
 *
 * const rm = defineTool({
 *   name: "rm",
 *   description: "Remove a file",
 *   parameters: { type: "object" },
 *   output: { schema: { type: "string" }, render: (_args, value) => String(value) },
 *   execute: () => "removed",
 * });
 * const guard = { type: "function" as const, name: "guard", run: () => ({ decision: "block" as const, reason: "not here" }) };
 * const harness = await createHarness({
 *   tools: [rm],
 *   plugins: [hookBridge({ hooks: { PreToolUse: [{ matcher: "rm|shell", hooks: [guard] }] } })],
 * });
 * const signal = new AbortController().signal;
 * const result = await harness.ctx.service("tools").execute({ callId: "c1", name: "rm", arguments: "{}", signal });
 * assert.equal(result.error?.code, "DENIED");
 * await harness.dispose();
 * ```
 */
export function hookBridge(options: HookBridgeOptions = {}): HarnessPlugin<void> {
  const table = checkHookTable(options.hooks);
  // Each matcher's pattern, compiled once (checkHookTable has compiled each already, so none throws here).
  const patterns = new Map<object, RegExp | undefined>();
  for (const matchers of Object.values(table)) {
    for (const matcher of matchers ?? []) patterns.set(matcher, matcherPattern(matcher.matcher));
  }
  const maxStop = options.maxStopContinuations ?? 8;
  // NaN would never be reached (`count >= NaN` is false): Stop hooks would keep a turn going without end.
  if (!Number.isInteger(maxStop) || maxStop < 0) {
    throw new HarnessError(
      "INVALID_ARGS",
      `maxStopContinuations must be a non-negative integer, not ${String(maxStop)}`,
    );
  }
  const errors = options.preToolUseErrors ?? "ignore";
  if (errors !== "ignore" && errors !== "deny") {
    throw new HarnessError("INVALID_ARGS", `preToolUseErrors is "ignore" or "deny", not ${String(errors)}`);
  }
  const failClosed = errors === "deny";
  // Checked here: a variable no process can take would fail every command hook, and a failed hook fails open.
  const inherited = checkEnvNames(options.inheritEnv, SHELL_ENV, "hookBridge");
  const extraEnv = checkEnv(options.env, "hookBridge") ?? {};
  /** A command hook's environment: the variables picked from this process at this call, then `env` (see options). */
  const commandEnv = (): Readonly<Record<string, string>> =>
    inherited === true ? extraEnv : overlayEnv(pickEnv(inherited), extraEnv);
  const plugin = (raw: HarnessContext) => {
    const ctx = raw as unknown as Ctx;
    const has = (event: HookEventName) => (table[event] ?? []).some((m) => m.hooks.length > 0);
    // Ids of the messages the bridge adds come from the harness's source, as the loop's do (ctx.sessions.newId()):
    // a harness with deterministic ids logs deterministic hook context.
    const newId = () => ctx.service("sessions").newId();
    /** A context message id: the session and the handler (unlogged invocations have no handler id: a new id). */
    const contextId = (sessionId: string, handlerId: string) =>
      `${sessionId}:${handlerId === "" ? newId() : handlerId}`;
    ctx.provide("hooks", {
      events: () => (Object.keys(table) as HookEventName[]).filter(has),
      table: () => table,
      environment: () => ({ inheritEnv: inherited, env: extraEnv }),
    });

    /** Run the matching hooks of `event` in order; a blocking verdict ends the run. */
    const invoke = async (
      event: HookEventName,
      input: HookInput,
      o: { session: Session | undefined; subject?: string; callId?: string; signal?: AbortSignal; log: boolean },
    ): Promise<{ verdict: HookVerdict; handlerId: string }[]> => {
      const out: { verdict: HookVerdict; handlerId: string }[] = [];
      const signal = o.signal ?? new AbortController().signal;
      // Records belong to an open turn: a tool executed directly (not by the loop) logs nothing.
      const openTurn = (s: Session) => ctx.service("sessionProjections").stateOf(s, turnBoundary).open?.turn;
      const turn = o.log && o.session !== undefined ? openTurn(o.session) : undefined;
      const session = turn !== undefined ? o.session : undefined;
      for (const matcher of table[event] ?? []) {
        if (!matches(patterns.get(matcher), o.subject)) continue;
        for (const handler of matcher.hooks) {
          const hook = hookLabel(handler);
          let handlerId = "";
          if (session !== undefined) {
            handlerId = `hook-${session.seq}`;
            session.append("hook/invoked", {
              handlerId,
              event,
              hook,
              ...(event === "PreToolUse" || event === "PostToolUse" ? { toolName: o.subject } : {}),
              ...(o.callId !== undefined ? { callId: o.callId } : {}),
            } as never);
          }
          const verdict = await runHook(handler, input, {
            subprocess: ctx.get("subprocess"),
            signal,
            // Never a list: a provider written when inheritEnv was a boolean would read it as "not false", everything.
            inheritEnv: inherited === true,
            env: handler.type === "command" ? commandEnv() : extraEnv,
            ...(o.session?.header.cwd !== undefined ? { cwd: o.session.header.cwd } : {}),
          });
          const logged = event === "Stop" && verdict.outcome === "block" && verdict.stop !== true
            ? { ...verdict, outcome: "continue-turn" as const }
            : verdict;
          // A hook stopped by its turn's cancellation, or that answered after its turn ended (the turn was
          // cancelled and stopped waiting for it): its result belongs to no open turn, and is not logged (its
          // hook/invoked stays without one).
          if (session !== undefined && !signal.aborted && openTurn(session) === turn) {
            const { stop: _stop, ...fields } = logged;
            session.append("hook/result", { handlerId, ...fields });
          }
          ctx.emit("hooks/result", {
            event,
            sessionId: input.session_id,
            ...(handlerId !== "" ? { handlerId } : {}),
            hook,
            verdict: logged,
          });
          out.push({ verdict, handlerId });
          if (verdict.stop || verdict.outcome === "block" || verdict.outcome === "deny") return out;
        }
      }
      return out;
    };
    const sessionOf = (id: string | undefined) => (id === undefined ? undefined : ctx.service("sessions").get(id));
    const agentOf = (id: string | undefined) =>
      id === undefined ? undefined : (ctx.get("agents" as never) as { get(id: string): Agent | undefined } | undefined)
        ?.get(id);
    const baseInput = (session: Session | undefined, id: string, event: HookEventName) => ({
      session_id: id,
      hook_event_name: event,
      ...(session?.header.cwd !== undefined ? { cwd: session.header.cwd } : {}),
    });

    if (has("PreToolUse")) {
      ctx.on("tools/pre-execute", async (exec, next) => {
        const id = exec.sessionId ?? "";
        const session = sessionOf(exec.sessionId);
        const results = await invoke("PreToolUse", {
          ...baseInput(session, id, "PreToolUse"),
          tool_name: exec.name,
          tool_input: exec.args,
          tool_use_id: exec.callId,
        }, { session, subject: exec.name, callId: exec.callId, signal: exec.signal, log: true });
        let input: unknown;
        let ask: HookVerdict | undefined;
        let allow = false;
        for (const { verdict } of results) {
          if (verdict.outcome === "error" && failClosed) {
            return { kind: "deny", reason: `a PreToolUse hook failed (${verdict.code ?? "HOOK_FAILED"})` };
          }
          if (verdict.stop) {
            agentOf(exec.sessionId)?.cancel("hook", { keepInbox: true });
            return { kind: "deny", reason: verdict.reason ?? "stopped by a hook" };
          }
          if (verdict.outcome === "deny" || verdict.outcome === "block") {
            return { kind: "deny", reason: verdict.reason ?? "denied by a hook" };
          }
          if (verdict.updatedInput !== undefined) input = verdict.updatedInput;
          if (verdict.outcome === "ask") ask = verdict;
          if (verdict.outcome === "allow") allow = true;
        }
        // The listeners after the bridge (permission rules, a policy) still decide: their deny wins, their own ask
        // stands, a hook's ask stays an ask; a hook's allow only spares the call the default ask of a write tool.
        const later = await next();
        if (later.kind === "deny") return later;
        const carried = input ?? later.input;
        const rewrite = carried !== undefined ? { input: carried } : {};
        if (ask !== undefined) {
          const reason = ask.reason || (later.kind === "ask" && !isDefaultAsk(later) ? later.reason : undefined);
          return { kind: "ask", ...(reason ? { reason } : {}), ...rewrite };
        }
        if (allow && later.kind === "ask" && isDefaultAsk(later)) return { kind: "allow", ...rewrite };
        // A later listener's own allow judged the call as the model made it, not the hook's rewrite: the rewritten
        // call is asked about (the question shows what will run) rather than run on an allow that never saw it.
        if (input !== undefined && !allow && later.kind === "allow" && !isDefaultAllow(later)) {
          return { kind: "ask", reason: "a hook rewrote the input of a call that a later listener allowed", input };
        }
        return input !== undefined ? { ...later, input } : later;
      });
    }

    if (has("PostToolUse")) {
      ctx.on("tools/post-execute", async (exec, outcome, next) => {
        const id = exec.sessionId ?? "";
        const session = sessionOf(exec.sessionId);
        const results = await invoke("PostToolUse", {
          ...baseInput(session, id, "PostToolUse"),
          tool_name: exec.name,
          tool_input: exec.args,
          tool_use_id: exec.callId,
          tool_response: {
            content: outcome.content,
            isError: outcome.isError,
            ...(outcome.isError ? { error: outcome.error } : {}),
          },
        }, { session, subject: exec.name, callId: exec.callId, signal: exec.signal, log: true });
        const contexts = results.filter((r) => hasText(r.verdict.additionalContext))
          .map((r) => toolContext(contextId(id, r.handlerId), r.verdict.additionalContext!));
        const blocked = results.find((r) => r.verdict.outcome === "block");
        if (blocked?.verdict.stop) agentOf(exec.sessionId)?.cancel("hook", { keepInbox: true });
        if (blocked !== undefined) {
          return { kind: "block", feedback: blocked.verdict.reason ?? "blocked by a hook", contexts };
        }
        const decision = await next();
        return contexts.length === 0
          ? decision
          : { ...decision, contexts: [...(decision.contexts ?? []), ...contexts] };
      });
    }

    if (has("UserPromptSubmit")) {
      ctx.on("agent/pre-step", async (agent, proposal, next) => {
        // A subagent's prompts are its parent model's task, not a person's (Claude Code runs none for them).
        if (agent.session.header.origin === "subagent") return await next();
        const prompts = proposal.messages.filter((m) => m.role === "user" && m.source.kind === "user");
        const contexts: SystemMessage[] = [];
        for (const prompt of prompts) {
          const results = await invoke("UserPromptSubmit", {
            ...baseInput(agent.session, agent.id, "UserPromptSubmit"),
            prompt: textOf(prompt),
          }, { session: agent.session, signal: proposal.signal, log: true });
          for (const { verdict, handlerId } of results) {
            // A blocked prompt is erased: the step is rejected without it coming back (other steering waits).
            if (verdict.stop) {
              agent.cancel("hook", { keepInbox: true });
              return { kind: "reject", reason: verdict.reason, discard: [prompt.id] };
            }
            if (verdict.outcome === "block") return { kind: "reject", reason: verdict.reason, discard: [prompt.id] };
            if (hasText(verdict.additionalContext)) {
              contexts.push(
                contextMessage(contextId(agent.id, handlerId), verdict.additionalContext, "UserPromptSubmit"),
              );
            }
          }
        }
        const decision = await next();
        if (decision.kind !== "enter" || contexts.length === 0) return decision;
        return { kind: "enter", messages: [...decision.messages, ...contexts] };
      });
    }

    if (has("Stop")) {
      const continued = new WeakMap<Agent, { turn: number; count: number }>();
      ctx.on("agent/turn-stopping", async (agent, turn, signal) => {
        // A subagent's turn ends into its parent's task, which the parent's own Stop hooks see end.
        if (agent.session.header.origin === "subagent") return;
        const seen = continued.get(agent);
        const count = seen?.turn === turn ? seen.count : 0;
        const results = await invoke("Stop", {
          ...baseInput(agent.session, agent.id, "Stop"),
          stop_hook_active: count > 0,
        }, { session: agent.session, signal, log: true });
        const blocked = results.find((r) => r.verdict.outcome === "block" && r.verdict.stop !== true);
        if (blocked === undefined || count >= maxStop) return;
        continued.set(agent, { turn, count: count + 1 });
        const reason = hasText(blocked.verdict.reason) ? blocked.verdict.reason : "A Stop hook asked to go on";
        agent.send(contextMessage(contextId(agent.id, blocked.handlerId), reason, "Stop"), "next-step", false);
      });
    }

    if (has("SessionStart")) {
      ctx.on("agent/session-start", (agent, reason) => {
        // Subagents are started by their parent's task, not by a person: no SessionStart for them.
        if (agent.session.header.origin === "subagent") return;
        const source = reason === "create" ? "startup" : "resume";
        // The maintenance signal aborts on cancel() and dispose(): a command hook is killed, a function hook's signal
        // aborts, and the context it would have added is not added.
        agent.runMaintenance(async (signal) => {
          const results = await invoke("SessionStart", {
            ...baseInput(agent.session, agent.id, "SessionStart"),
            source,
          }, { session: agent.session, subject: source, signal, log: false });
          for (const { verdict } of results) {
            if (!hasText(verdict.additionalContext)) continue;
            // Unique within the session, as message ids are: SessionStart runs again on every resume of it.
            const id = `${agent.id}:session-start-${newId()}`;
            agent.inject(contextMessage(id, verdict.additionalContext, "SessionStart"));
          }
        }).catch((error) => ctx.emit("agent/error", agent, error));
      });
    }
  };
  plugin.pluginName = "hook-bridge";
  return plugin;
}
