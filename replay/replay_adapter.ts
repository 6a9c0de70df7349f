/**
 * The replay adapter: plays a fixture's recorded model calls back through
 * the full loop, one script per live session, optionally checking every live
 * request against the recorded one.
 *
 * @module
 */

import {
  type GenerateOptions,
  HarnessError,
  isRetryableFailure,
  type LlmAdapter,
  LlmFailure,
  type ModelInfo,
  type SessionEvent,
  type StreamChunk,
  type TokenUsage,
} from "../mod.ts";
import {
  type Fixture,
  type FixtureCall,
  type FixtureCompaction,
  fixtureFromLogs,
  type FixtureSession,
  type RecordedRequest,
} from "./fixture.ts";
import { diffRequest, type MessageMatch, messagesKey, newMessageMatch, sameMessages } from "./_request_diff.ts";
import { ABORTED_BEFORE_RETRY } from "../sdk/compaction/compact_session.ts";
import { fillPlaceholders } from "./_placeholders.ts";
import { type EntryProblem, entryProblem } from "./_check_entry.ts";
import { recordedModels, toModelInfo } from "./_recorded_models.ts";

/**
 * What the replay adapter does for one model call.
 *
 * - `{ chunks }` plays the chunks (a recorded call is such an entry);
 * - `{ throw }` plays `throw.chunks` (if any), then fails the call with
 *   `throw.code` (default `UNKNOWN`) and `throw.message`;
 * - `{ hang }` plays `chunks` (if any), then waits until the call is aborted
 *   and ends with an `aborted` finish.
 *
 * A recorded call whose stream ended in an `aborted` finish (the user
 * cancelled it, or a crash cut it off: see `FixtureCall.chunks`) replays as
 * a `{ hang }` entry of its other chunks.
 *
 * The chunks of an override entry are checked when the entry is given (see
 * {@linkcode replayAdapter}): each must be a chunk of the stream protocol
 * (`StreamChunk`) in shape; the order of the stream is not checked, so an
 * override may play a broken stream on purpose. Recorded calls are not
 * checked: they hold what the runtime took from the adapter and logged
 * (a chunk type it does not know included, which the loop passes over),
 * and play it back alike.
 *
 * Strings in the chunks of overrides may hold `{{fromRequest:<regex>}}` placeholders (recorded calls play
 * verbatim): each is
 * replaced, when the call is played, by the first match of the regular
 * expression (its first capture group when it has one) in the live request's
 * message texts, searched from the last message to the first, then in the
 * system prompt. Inside tool-call `arguments` and `argumentsDelta` (raw JSON
 * text) the value is inserted JSON-escaped, so a quote or backslash in it
 * keeps the arguments valid JSON.
 */
export type ReplayEntry =
  | { readonly chunks: readonly StreamChunk[] }
  | {
    readonly throw: { readonly message: string; readonly code?: string; readonly chunks?: readonly StreamChunk[] };
  }
  | { readonly hang: true | Record<string, never>; readonly chunks?: readonly StreamChunk[] };

/** One change to a session's script: replace the entry at `at` (or append it when `at` is the script's length). */
export interface ReplayPatch {
  /** The call index in the session's script, from 0. */
  readonly at: number;
  /**
   * The fixture session: its index in `fixture.sessions` or its id.
   *
   * @default {0}
   */
  readonly session?: number | string;
  /** The entry to play instead. */
  readonly entry: ReplayEntry;
}

/**
 * Overrides of the recorded scripts (the `.override.json` sidecar of a
 * fixture file has the same shape): either a whole script for the first
 * session, or patches.
 */
export type ReplayOverrides = readonly ReplayEntry[] | { readonly patches: readonly ReplayPatch[] };

/** Options of {@linkcode replayAdapter}. */
export interface ReplayAdapterOptions {
  /** The fixture (from `loadFixture`), or one session log's events. */
  readonly fixture: Fixture | readonly SessionEvent[];
  /**
   * The provider routes to serve, one adapter each (see `ReplayAdapter.adapters`).
   *
   * @default {every provider the fixture's request headers name, or ["replay"] when none}
   */
  readonly providers?: readonly string[];
  /**
   * The model catalogue of every route.
   *
   * @default {the models the fixture recorded, with the defaults the recorded adapter filled in}
   */
  readonly models?: readonly ModelInfo[];
  /**
   * Compare each live request with the recorded request header and derived
   * history at the same point of the fixture; the first divergence fails the
   * call (`REPLAY_DIVERGED`) with a readable diff. A compaction's summary call
   * is answered from the recorded compactions and not compared; one more than
   * the recording made fails `REPLAY_DIVERGED`.
   *
   * @default {false}
   */
  readonly strict?: boolean;
  /**
   * How many of the latest requests `requests` keeps. Each request holds the
   * whole history as it stood, so keeping every request of a long replay costs
   * O(turns²) message slots; strict mode compares each request as it arrives
   * and needs none of them afterwards. Pass `Infinity` to keep them all.
   *
   * @default {64}
   */
  readonly keepRequests?: number;
  /** Changes to the recorded scripts, applied after the fixture's own sidecar overrides. */
  readonly overrides?: ReplayOverrides;
}

/** The adapter returned by {@linkcode replayAdapter}. */
export interface ReplayAdapter extends LlmAdapter {
  /** One adapter per provider route, this one first; they share their scripts and cursors. */
  readonly adapters: readonly LlmAdapter[];
  /** The latest requests received (at most `keepRequests` of them), in call order. */
  readonly requests: readonly GenerateOptions[];
  /** How many requests were received in all (`requests` may hold fewer). */
  readonly requestCount: number;
  /** The failures raised so far (divergences, runs past the end), in order. */
  readonly failures: readonly LlmFailure[];
  /**
   * Check that the run went as recorded: rethrows the first failure raised
   * during the run, then checks that every script was bound and played to
   * the end.
   *
   * @throws {LlmFailure} The first `REPLAY_DIVERGED`, `REPLAY_EXHAUSTED` or `REPLAY_PLACEHOLDER` failure.
   * @throws {HarnessError} `REPLAY_NOT_CONSUMED` when calls or recorded compactions are left.
   */
  assertConsumed(): void;
}

interface Script {
  readonly session: FixtureSession;
  readonly entries: ReplayEntry[];
  readonly expected: readonly (RecordedRequest | undefined)[];
  /** The answers of the recorded compactions' summary calls, in order. */
  readonly compactions: readonly CompactionAnswer[];
}

/** The answer of one recorded compaction's summary calls. */
interface CompactionAnswer {
  readonly entry: ReplayEntry;
  /** How many summary calls it answered when recorded; absent in logs written before `compaction/end` told it. */
  readonly attempts?: number;
}

interface Binding {
  readonly script: Script;
  readonly liveId: string;
  played: number;
  /** How many recorded compactions the session's summary calls have taken. */
  compacted: number;
  /**
   * The compaction whose summary calls are being answered, while it may take more (retries): as many as the recording
   * made, or, for a log that did not count them, while the request's message ids stay the same.
   */
  lastCompaction?: { readonly answer: CompactionAnswer; calls: number; readonly ids: string };
  /** The recorded compactions whose summary calls the live run did not all make (it did not retry as often). */
  readonly shortfalls: string[];
  /** What the session's previous strict comparison matched. */
  readonly match: MessageMatch;
}

/** The answer to a recorded summary call that failed and was retried, when the log does not keep its failure. */
const RETRIED_ATTEMPT: ReplayEntry = {
  throw: { code: "SERVER", message: "Replayed summary call: a retried failure the log does not keep" },
};

/** Whether a recorded summary call's answer, in a log that did not count the calls, was retried: a retried failure. */
const retried = (entry: ReplayEntry): boolean =>
  "throw" in entry && isRetryableFailure({ code: entry.throw.code ?? "UNKNOWN", message: entry.throw.message });

/** The ids of a request's messages, for telling a summary call's retry (same ids, even when copied) apart. */
const messageIds = (request: GenerateOptions): string => JSON.stringify(request.messages.map((m) => m.id));

/** The text the agent loop's runtime gives a model call the user cancelled (`_guard_stream.ts`), and a replay's. */
const CANCELLED = /^ABORTED: (Replayed model|Model) call was aborted(: [\s\S]*)?$/;

/**
 * What a recorded compaction's summary call answered, rebuilt from what the log tells: the summary as a text answer
 * with a `stop` finish; for a compaction that failed, the answer that fails it alike: from the recorded `failure`
 * (a hang when the call was cancelled), else from the `error` text (the error texts of `compactSession`; a text it
 * does not know fails the call with `UNKNOWN` and that text).
 */
function compactionEntry(compaction: FixtureCompaction): ReplayEntry {
  return withUsage(compactionAnswer(compaction), compaction.usage);
}

/**
 * The answer with the compaction's recorded usage (the sum over its summary calls) streamed by it, before its finish:
 * the replayed compaction then records the same sum (its retried calls, answered `SERVER`, report none).
 */
function withUsage(entry: ReplayEntry, usage: TokenUsage | undefined): ReplayEntry {
  if (usage === undefined) return entry;
  const chunk: StreamChunk = { type: "usage", usage };
  if ("throw" in entry) return { throw: { ...entry.throw, chunks: [...(entry.throw.chunks ?? []), chunk] } };
  if ("hang" in entry) return { ...entry, chunks: [...(entry.chunks ?? []), chunk] };
  const finish = entry.chunks.at(-1)?.type === "finish" ? entry.chunks.length - 1 : entry.chunks.length;
  return { chunks: [...entry.chunks.slice(0, finish), chunk, ...entry.chunks.slice(finish)] };
}

function compactionAnswer(compaction: FixtureCompaction): ReplayEntry {
  const stop: StreamChunk = { type: "finish", reason: { kind: "stop" } };
  if (compaction.summary !== undefined) {
    return { chunks: [{ type: "text-delta", index: 0, text: compaction.summary }, stop] };
  }
  const failure = compaction.failure;
  if (failure !== undefined) {
    return failure.cancelled === true ? { hang: true } : { throw: { code: failure.code, message: failure.message } };
  }
  // A log written before `compaction/end` recorded the failure as data: its text.
  const error = compaction.error ?? "";
  if (error === "the model returned no summary") return { chunks: [stop] };
  if (error === "the model called a tool instead of summarizing") {
    const block = { type: "tool-call", id: "replayed-compaction-call", name: "tool", arguments: "{}" } as const;
    return {
      chunks: [
        { type: "block-start", index: 0, blockType: "tool-call" },
        { type: "tool-call-delta", index: 0, id: block.id, name: block.name, argumentsDelta: block.arguments },
        { type: "block-end", index: 0, block },
        stop,
      ],
    };
  }
  const ended = /^the summary call ended with (.+), not stop$/.exec(error);
  if (ended !== null) return { chunks: [{ type: "finish", reason: { kind: ended[1] } } as StreamChunk] };
  // Only the runtime's own cancel text was a cancel: an adapter's `ABORTED` failure failed the call.
  if (CANCELLED.test(error)) return { hang: true };
  // `<code>: <message>`: the call failed (each retry alike). The note of a retry the user cancelled follows only a
  // failure that is retried (its code says so); after any other it is the message's own text.
  const failed = /^([A-Za-z0-9_.-]+): ([\s\S]*)$/.exec(error);
  if (failed === null) return { throw: { code: "UNKNOWN", message: error } };
  const [, code, message] = failed;
  const noted = message.endsWith(ABORTED_BEFORE_RETRY) && isRetryableFailure({ code, message });
  return { throw: { code, message: noted ? message.slice(0, -ABORTED_BEFORE_RETRY.length) : message } };
}

/** A malformed entry or chunk as `INVALID_ARGS`, naming the bad field's path (also in `details.path`). */
function invalidEntry(problem: EntryProblem, what: string): HarnessError {
  return new HarnessError("INVALID_ARGS", `${what}: ${problem.path} ${problem.message}`, {
    details: { path: problem.path },
  });
}

function checkEntry(entry: ReplayEntry, where: string, path: string): ReplayEntry {
  const problem = entryProblem(entry, path);
  if (problem !== undefined) throw invalidEntry(problem, `Replay entry ${where}`);
  return entry;
}

/** Apply overrides; `root` names them in error paths (`overrides`, `fixture.overrides`). */
function applyOverrides(scripts: Script[], overrides: ReplayOverrides | undefined, root: string): void {
  if (overrides === undefined) return;
  if (Array.isArray(overrides)) {
    if (scripts.length === 0) throw new HarnessError("INVALID_ARGS", "Replay overrides need a fixture with a session");
    const entries = overrides as readonly ReplayEntry[];
    scripts[0].entries.splice(0, Infinity, ...entries.map((e, i) => checkEntry(e, `${i}`, `${root}[${i}]`)));
    return;
  }
  const patches = typeof overrides === "object" && overrides !== null
    ? (overrides as { patches?: unknown }).patches
    : undefined;
  if (!Array.isArray(patches)) {
    throw new HarnessError("INVALID_ARGS", "Replay overrides must be an array of entries or { patches: [...] }");
  }
  for (const [i, patch] of (patches as ReplayPatch[]).entries()) {
    if (typeof patch !== "object" || patch === null) {
      throw new HarnessError("INVALID_ARGS", `Replay patch ${i} is not an object`);
    }
    const which = patch.session ?? 0;
    const script = typeof which === "number" ? scripts[which] : scripts.find((s) => s.session.id === which);
    if (script === undefined) {
      throw new HarnessError(
        "INVALID_ARGS",
        `Replay patch ${i} names fixture session ${JSON.stringify(which)}, which does not exist`,
      );
    }
    if (!Number.isInteger(patch.at) || patch.at < 0 || patch.at > script.entries.length) {
      throw new HarnessError(
        "INVALID_ARGS",
        `Replay patch ${i} is at call ${patch.at}, but fixture session ${script.session.id} has ${script.entries.length} calls`,
      );
    }
    script.entries[patch.at] = checkEntry(patch.entry, `of patch ${i}`, `${root}.patches[${i}].entry`);
  }
}

function abortedFinish(): StreamChunk {
  return {
    type: "finish",
    reason: { kind: "aborted", failure: { code: "ABORTED", message: "Replayed model call was aborted" } },
  };
}

/**
 * Create a replay adapter over a fixture.
 *
 * Each live session (the request's `sessionId`) is bound, on its first call,
 * to the unused script of the fixture session with the same id; else, for a
 * live child `<live parent>.<part>` of a bound live session (a subagent's id
 * is `<parent>.<callId>`), to the unused script `<recorded parent>.<part>` of
 * the fixture session its parent is bound to; else (ids that differ between
 * runs) to the first unused script that has calls whose first recorded
 * request equals the live request (sessions may call the model in another
 * order than they were created), and when none does, to the next unused
 * script that has calls (parents first, then children by creation time). Its
 * calls then play that script's entries in order, from the first — or, for
 * a session that comes with calls of its own already made (resumed from
 * storage that held them before this run: its first request has a longer
 * history than its first recorded call), from the recorded call whose
 * messages equal its first request's, the calls and compactions before it
 * counted as played. A call
 * past the end of the scripts, or of its session's script, fails loudly
 * (`REPLAY_EXHAUSTED`).
 *
 * A compaction's summary call (`purpose: "compaction"`) is not in the log as
 * chunks, so it is not in the script: it is answered from the session's
 * recorded compactions (`FixtureSession.compactions`), in order — the recorded
 * summary as a text answer with a `stop` finish, or, for a compaction that
 * failed, an answer that fails it with the recorded failure (a hang when the
 * summary call was cancelled). A compaction takes as many summary calls as
 * `compaction/end` counted: its last gets the recorded answer, and the calls
 * before it, which were retried, fail `SERVER` (the log does not keep their
 * failures). A retry keeps the messages' ids: a summary call with other ids,
 * or a model call of the session, ends the compaction, and `assertConsumed()`
 * reports the summary calls it did not make. For a log written before
 * `compaction/end` counted them, only a failure whose code is retried takes
 * retries (the calls whose messages keep the same ids); any other compaction
 * takes one call. No override entry is needed for it, and
 * strict mode does not compare it (the summary shows in every later request,
 * which is compared). A summary call with no recorded compaction left fails
 * `REPLAY_DIVERGED` in strict mode; otherwise it takes the script's next entry,
 * as any call. In strict mode a live request that differs from the
 * recorded one fails with `REPLAY_DIVERGED`, naming the first difference
 * (call config, system prompt, a tool schema, or a message by index) with a
 * unified diff (`-` fixture, `+` live; a message or schema as sorted JSON, but
 * a text with line breaks, such as a file a tool read, one of its lines per
 * line between `"""` marks, so the diff shows the lines that changed);
 * message ids are ignored. Failures
 * are thrown from the stream as {@linkcode LlmFailure}s (so the turn ends
 * with that error code), kept in `failures`, and rethrown by
 * `assertConsumed()`.
 *
 * The adapter serves the models the fixture recorded, with the same default
 * reasoning effort and max tokens, so the replayed request headers equal the
 * recorded ones.
 *
 * @param options The fixture, routes, strictness and overrides.
 * @returns The adapter (for the first route) with its sibling routes in `adapters`.
 * @throws {HarnessError} `INVALID_ARGS` for a malformed fixture, override or option, before any call: among them an
 *   override entry or chunk that is not of the stream protocol's shape (a chunk of an unknown `type`, such as a
 *   misspelled `finish`, a block index that is not a count, …), the message and `details.path` naming the bad field,
 *   such as `overrides.patches[1].entry.chunks[0].type` (`fixture.overrides…` for the fixture's sidecar).
 *
 * @example Replaying a recorded answer through the full loop
 * ```ts
 * import { createHarness } from "@dsh/harness";
 * import { replayAdapter } from "@dsh/harness/replay";
 * import { scriptedAdapter, textResponse } from "@dsh/harness/testing";
 * import assert from "node:assert/strict";
 *
 * // Record a session with a scripted model.
 * const recording = await createHarness({ adapters: [scriptedAdapter(textResponse("Hi there"))] });
 * const agent = await recording.createAgent({ provider: "scripted", model: "scripted-model" });
 * await agent.run("Hello");
 * const log = agent.session.events;
 * await recording.dispose();
 *
 * // Replay it: no model is called.
 * const replay = replayAdapter({ fixture: log, strict: true });
 * const harness = await createHarness({ adapters: replay.adapters });
 * const again = await harness.createAgent({ provider: "scripted", model: "scripted-model" });
 * const result = await again.run("Hello");
 * assert.equal(result.text, "Hi there");
 * replay.assertConsumed();
 * await harness.dispose();
 * ```
 */
export function replayAdapter(options: ReplayAdapterOptions): ReplayAdapter {
  if (typeof options !== "object" || options === null || options.fixture === undefined) {
    throw new HarnessError("INVALID_ARGS", "replayAdapter() needs a fixture");
  }
  const fixture: Fixture = Array.isArray(options.fixture)
    ? fixtureFromLogs(options.fixture as readonly SessionEvent[])
    : options.fixture as Fixture;
  if (!Array.isArray(fixture.sessions)) throw new HarnessError("INVALID_ARGS", "A fixture must have a sessions array");
  // Recorded entries play verbatim (placeholders are for overrides). A call the user cancelled mid-stream was
  // recorded ending in an aborted finish: it replays as a hang, so the replayed run is cancelled at the same point
  // instead of failing on a finish that arrives before the cancel.
  const recordedEntries = new WeakSet<ReplayEntry>([RETRIED_ATTEMPT]);
  const recordedEntry = (call: FixtureCall): ReplayEntry => {
    const last = call.chunks.at(-1);
    const entry: ReplayEntry = last?.type === "finish" && last.reason.kind === "aborted"
      ? { hang: true, chunks: call.chunks.slice(0, -1) }
      : { chunks: call.chunks };
    recordedEntries.add(entry);
    return entry;
  };
  const scripts: Script[] = fixture.sessions.map((session) => ({
    session,
    entries: session.calls.map(recordedEntry),
    expected: session.calls.map((call: FixtureCall) => call.request),
    compactions: (session.compactions ?? []).map((compaction: FixtureCompaction): CompactionAnswer => {
      const entry = compactionEntry(compaction);
      recordedEntries.add(entry);
      return typeof compaction.attempts === "number" ? { entry, attempts: compaction.attempts } : { entry };
    }),
  }));
  applyOverrides(scripts, fixture.overrides, "fixture.overrides");
  applyOverrides(scripts, options.overrides, "overrides");

  const recorded = recordedModels(fixture);
  const providers = options.providers ?? (recorded.size > 0 ? [...recorded.keys()] : ["replay"]);
  if (!Array.isArray(providers) || providers.length === 0 || providers.some((p) => typeof p !== "string" || p === "")) {
    throw new HarnessError("INVALID_ARGS", "Replay providers must be a non-empty array of provider names");
  }
  const modelsFor = (provider: string): readonly ModelInfo[] => {
    if (options.models !== undefined) return options.models;
    const own = recorded.get(provider) ?? new Map([...recorded.values()].flatMap((m) => [...m]));
    return Object.freeze([...own].map(([id, facts]) => toModelInfo(id, facts)));
  };

  const strict = options.strict ?? false;
  const bindings = new Map<string, Binding>();
  const requests: GenerateOptions[] = [];
  const keep = options.keepRequests ?? 64;
  if (!(keep >= 0) || (keep !== Infinity && !Number.isSafeInteger(keep))) {
    throw new HarnessError("INVALID_ARGS", `keepRequests must be a non-negative integer or Infinity, got ${keep}`);
  }
  let requestCount = 0;
  const failures: LlmFailure[] = [];
  const bound = new Set<Script>();

  const fail = (code: string, message: string): never => {
    const failure = new LlmFailure(code, message);
    failures.push(failure);
    throw failure;
  };

  // A child's id is its parent's id, a dot, and a part of its own (`<parent>.<callId>` for a delegation): a live
  // child of a bound live session is bound to the recorded session with the same part under the recorded parent,
  // so parallel children are told apart by their call ids, not by when they first called the model.
  const relativeScript = (liveId: string): Script | undefined => {
    let parent: Binding | undefined;
    for (const binding of bindings.values()) {
      if (
        liveId.startsWith(binding.liveId + ".") &&
        (parent === undefined || binding.liveId.length > parent.liveId.length)
      ) parent = binding;
    }
    if (parent === undefined) return undefined;
    const id = parent.script.session.id + liveId.slice(parent.liveId.length);
    return scripts.find((s) => s.session.id === id && !bound.has(s));
  };

  // The first recorded request's key (see messagesKey), per script, for binding a session with a new id.
  const firstKeys = new Map<Script, string | null>();
  const firstKey = (script: Script): string | null => {
    let key = firstKeys.get(script);
    if (key === undefined) {
      const expected = script.expected[0];
      firstKeys.set(script, key = expected === undefined ? null : messagesKey(expected.messages));
    }
    return key;
  };

  // Otherwise an unused script with calls: sessions may make their first call in another order than they were
  // created (the fixture's order: parents first, then children by creation time), so the first unused script whose
  // first recorded request equals the live one, else the next unused one in order.
  const nextScript = (request: GenerateOptions): Script | undefined => {
    const unused = scripts.filter((s) => !bound.has(s) && (s.entries.length > 0 || s.compactions.length > 0));
    if (unused.length <= 1) return unused[0];
    const key = messagesKey(request.messages);
    return unused.find((s) => firstKey(s) === key && diffRequest(s.expected[0]!, request) === undefined) ??
      unused[0];
  };

  // Where a newly bound session starts in its script: at its first call, unless the live session comes with a longer
  // history than its first recorded call had (resumed from storage that held calls of its own before this run) and a
  // later recorded call has exactly its messages: then there, the calls and compactions logged before it counted as
  // played. Anything else (a drifted history, an override that changed the script's length) starts at the first call.
  const startOf = (script: Script, request: GenerateOptions): { played: number; compacted: number } => {
    const calls = script.session.calls;
    const count = request.messages.length;
    const first = script.expected[0];
    if (first === undefined || first.messages.length >= count || script.entries.length !== calls.length) {
      return { played: 0, compacted: 0 };
    }
    for (let i = 1; i < calls.length; i++) {
      const expected = script.expected[i];
      if (expected === undefined || !sameMessages(expected.messages, request.messages)) continue;
      const before = (script.session.compactions ?? []).filter((c) => c.seq < calls[i].seq).length;
      return { played: i, compacted: before };
    }
    return { played: 0, compacted: 0 };
  };

  const bindingFor = (request: GenerateOptions): Binding => {
    const liveId = request.sessionId ?? "(no session id)";
    let binding = bindings.get(liveId);
    if (binding === undefined) {
      // Its own recorded session first: sessions may call the model in another order than they were created.
      const script = scripts.find((s) => s.session.id === liveId && !bound.has(s)) ??
        relativeScript(liveId) ?? nextScript(request);
      if (script === undefined) {
        return fail(
          "REPLAY_EXHAUSTED",
          `Replay has no script left for session ${liveId}: the fixture's ${scripts.length} sessions are all bound`,
        );
      }
      bound.add(script);
      const { played, compacted } = request.purpose === "compaction"
        ? { played: 0, compacted: 0 }
        : startOf(script, request);
      binding = { script, liveId, played, compacted, shortfalls: [], match: newMessageMatch() };
      bindings.set(liveId, binding);
    }
    return binding;
  };

  // A compaction's summary call is answered from the session's recorded compactions, in order, outside the script
  // of model calls (the log has no chunks for it). A compaction takes as many summary calls as the recording
  // counted (`compaction/end`'s `attempts`): the calls before its last were retried, so each gets a retryable
  // failure (RETRIED_ATTEMPT: the log keeps only the last call's failure, and a failure that is not retried, as the
  // last may be, would end the live compaction there), and its last call gets the recorded answer. A retry keeps the
  // messages' ids (the runtime may copy the messages on every call, so they are not the same objects): a summary
  // call with other ids, or a model call of the session, ends the compaction, and the calls it did not make are a
  // shortfall that assertConsumed reports. A log that did not count the calls retries only a failure whose code is
  // retried (isRetryableFailure), while the ids stay the same: any other failure ended its compaction, and the next
  // summary call, over the same messages or not, is the next compaction's.
  const shortfall = (binding: Binding): string | undefined => {
    const last = binding.lastCompaction;
    const attempts = last?.answer.attempts;
    if (last === undefined || attempts === undefined || last.calls >= attempts) return undefined;
    return `fixture session ${binding.script.session.id} (live ${binding.liveId}) made ${last.calls} of the ${attempts} summary calls of its compaction ${binding.compacted}`;
  };
  const endCompaction = (binding: Binding): void => {
    const missing = shortfall(binding);
    if (missing !== undefined) binding.shortfalls.push(missing);
    binding.lastCompaction = undefined;
  };

  const compactionFor = (binding: Binding, request: GenerateOptions): ReplayEntry | undefined => {
    const last = binding.lastCompaction;
    const ids = messageIds(request);
    if (last !== undefined) {
      const { entry, attempts } = last.answer;
      if (last.ids === ids && (attempts !== undefined ? last.calls < attempts : retried(entry))) {
        last.calls++;
        return attempts === undefined || last.calls === attempts ? entry : RETRIED_ATTEMPT;
      }
      endCompaction(binding);
    }
    const { script } = binding;
    // A compaction that made no summary call (it failed before one) takes none.
    while (script.compactions[binding.compacted]?.attempts === 0) binding.compacted++;
    const answer = script.compactions[binding.compacted];
    if (answer === undefined) {
      if (!strict) return undefined;
      fail(
        "REPLAY_DIVERGED",
        `Strict replay diverged: session ${binding.liveId} compacted (its compaction ${
          binding.compacted + 1
        }), but fixture session ${script.session.id} recorded ${script.compactions.length} compaction${
          script.compactions.length === 1 ? "" : "s"
        }`,
      );
    }
    binding.compacted++;
    const { entry, attempts } = answer!;
    if (attempts !== undefined ? attempts > 1 : retried(entry)) {
      binding.lastCompaction = { answer: answer!, calls: 1, ids };
    }
    return attempts === undefined || attempts <= 1 ? entry : RETRIED_ATTEMPT;
  };

  const entryFor = (request: GenerateOptions): ReplayEntry => {
    const binding = bindingFor(request);
    if (request.purpose === "compaction") {
      const entry = compactionFor(binding, request);
      if (entry !== undefined) return entry;
    } else endCompaction(binding);
    const { script, liveId } = binding;
    const index = binding.played++;
    if (index >= script.entries.length) {
      fail(
        "REPLAY_EXHAUSTED",
        `Replay ran past the end of fixture session ${script.session.id}: session ${liveId} made call ${
          index + 1
        }, the script has ${script.entries.length}`,
      );
    }
    const expected = script.expected[index];
    if (strict && expected !== undefined) {
      const divergence = diffRequest(expected, request, binding.match);
      if (divergence !== undefined) {
        const call = script.session.calls[index];
        fail(
          "REPLAY_DIVERGED",
          `Strict replay diverged at call ${
            index + 1
          } of fixture session ${script.session.id} (turn ${call.turn}, step ${call.step}): ${divergence.summary}\n${divergence.diff}`,
        );
      }
    }
    return script.entries[index];
  };

  async function* play(request: GenerateOptions): AsyncGenerator<StreamChunk, void, undefined> {
    const signal = request.signal ?? new AbortController().signal;
    const entry = entryFor(request);
    const chunks = "throw" in entry ? entry.throw.chunks ?? [] : entry.chunks ?? [];
    for (const chunk of chunks) {
      if (signal.aborted) {
        yield abortedFinish();
        return;
      }
      let filled: StreamChunk;
      try {
        filled = recordedEntries.has(entry) ? chunk : fillPlaceholders(chunk, request);
      } catch (error) {
        if (error instanceof LlmFailure) failures.push(error);
        throw error;
      }
      yield filled;
    }
    if ("throw" in entry) throw new LlmFailure(entry.throw.code ?? "UNKNOWN", entry.throw.message);
    if ("hang" in entry) {
      if (!signal.aborted) {
        await new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      }
      yield abortedFinish();
    }
  }

  const stream = (request: GenerateOptions): AsyncIterable<StreamChunk> => {
    requestCount++;
    if (keep > 0) {
      // Drop in halves, so trimming is amortised O(1) per request.
      if (requests.length >= keep * 2) requests.splice(0, requests.length - keep);
      requests.push(request);
    }
    return play(request);
  };

  const assertConsumed = (): void => {
    if (failures.length > 0) throw failures[0];
    const left: string[] = [];
    for (const script of scripts) {
      const binding = [...bindings.values()].find((b) => b.script === script);
      if (binding === undefined) {
        if (script.entries.length > 0 || script.compactions.length > 0) {
          left.push(
            `fixture session ${script.session.id} was never bound (${script.entries.length} calls${
              script.compactions.length > 0 ? `, ${script.compactions.length} compactions` : ""
            })`,
          );
        }
      } else {
        if (binding.played < script.entries.length) {
          left.push(
            `fixture session ${script.session.id} (live ${binding.liveId}) played ${binding.played} of ${script.entries.length} calls`,
          );
        }
        left.push(...binding.shortfalls);
        const missing = shortfall(binding);
        if (missing !== undefined) left.push(missing);
        const made = script.compactions.slice(binding.compacted).filter((c) => c.attempts !== 0).length;
        if (made > 0) {
          left.push(
            `fixture session ${script.session.id} (live ${binding.liveId}) ran ${binding.compacted} of its ${script.compactions.length} recorded compactions`,
          );
        }
      }
    }
    if (left.length > 0) {
      throw new HarnessError("REPLAY_NOT_CONSUMED", `Replay left calls unplayed: ${left.join("; ")}`, {
        details: { unplayed: left },
      });
    }
  };

  const adapters: ReplayAdapter[] = [];
  for (const provider of providers) {
    adapters.push({
      provider,
      models: modelsFor(provider),
      get adapters() {
        return adapters;
      },
      get requests() {
        return requests.length > keep ? requests.slice(-keep) : requests;
      },
      get requestCount() {
        return requestCount;
      },
      failures,
      assertConsumed,
      stream,
    });
  }
  return adapters[0];
}
