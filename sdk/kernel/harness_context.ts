/**
 * The typed view over the Cordis 4 plugin kernel.
 *
 * Cordis types its events and services through ambient module augmentation,
 * which JSR rejects in published code. This file is the one place where a raw
 * Cordis `Context` is turned into a {@linkcode HarnessContext}: events are typed
 * by an event map `E`, services by a service map `S`, and every dispatch is
 * filtered by the scope of the context that dispatches it (see `scope.ts`).
 *
 * A little longer than the house limit on purpose: the public context types and
 * the one class that implements them over Cordis (dispatch modes, effects,
 * service lookups) change together and are read together.
 *
 * @module
 */

import { buildOuterStack, Context, symbols } from "cordis";
import { HarnessError } from "./harness_error.ts";
import { withoutStacks } from "./_without_stacks.ts";
import { containRejection } from "./_contain_rejection.ts";
import { calledFromTeardown, runForTeardown } from "./_teardown_calls.ts";

// deno-lint-ignore no-explicit-any
type AnyFunction = (...args: any[]) => any;

/** Events dispatched by the kernel itself. */
export interface KernelEvents {
  /**
   * A listener of an `emit`-mode event threw; the emitter carried on. Heard by
   * the reporters the failing dispatch reaches (the scope rule of every event:
   * a sibling scope's reporter does not hear it); on the console when none.
   */
  "kernel/listener-error": (name: string, error: unknown) => void;
  /**
   * A plugin failed where no caller hears it: its start, when nobody read its
   * handle's `ready` (a plugin a parent plugin started, say), or an undo of
   * its teardown when no `dispose()` call waits for it (a plugin stopped
   * because a service it injects went away). Without a listener, it is
   * written to the console.
   */
  "kernel/plugin-error": (plugin: string, error: unknown) => void;
}

/** Names of the events of an event map whose values are listener signatures. */
export type EventName<E> = { [K in keyof E]: E[K] extends AnyFunction ? K : never }[keyof E] & string;

/** Arguments of an event: for a waterfall the last one is the innermost `next`. */
export type EventArgs<E, K extends keyof E> = E[K] extends (...args: infer A) => unknown ? A : never;

/** Return type of an event's listener. */
export type EventResult<E, K extends keyof E> = E[K] extends (...args: never[]) => infer R ? R : never;

/** Options of {@linkcode HarnessContext.on}. */
export interface ListenerOptions {
  /**
   * Run before the listeners registered earlier.
   *
   * @default {false}
   */
  prepend?: boolean;
}

/** An opaque scope label; see `createScope`. */
export interface ScopeInfo {
  /** The key the scope was created with. */
  readonly key: string;
  /** The enclosing scope, if any. */
  readonly parent: ScopeInfo | undefined;
}

/**
 * A plugin: a function, or an object with `apply`, run on a child context.
 *
 * Registrations made through the context a plugin receives (listeners,
 * services, effects, child plugins) are undone when the plugin is disposed.
 * A plugin that lists services in `inject` starts only once all of them are
 * provided, and stops when one of them goes away.
 */
export type HarnessPlugin<C = void, E extends object = KernelEvents, S extends object = object> =
  | PluginFunction<C, E, S>
  | PluginObject<C, E, S>;

/** A plugin written as a function. */
export interface PluginFunction<C, E extends object, S extends object> {
  (ctx: HarnessContext<E, S>, config: C): void | Promise<void>;
  /** The plugin's name, for diagnostics. */
  pluginName?: string;
  /** Services that must be present before the plugin starts. */
  inject?: readonly string[];
}

/** A plugin written as an object. */
export interface PluginObject<C, E extends object, S extends object> {
  /** The plugin's name, for diagnostics. */
  name?: string;
  /** Services that must be present before the plugin starts. */
  inject?: readonly string[];
  /** Start the plugin. */
  apply(ctx: HarnessContext<E, S>, config: C): void | Promise<void>;
}

/** A running plugin. */
export interface PluginHandle {
  /**
   * Resolves once the plugin has started; rejects with what its `apply` threw.
   * A plugin disposed before it started (a registration its `apply` made
   * after that throws `CONTEXT_DISPOSED`) resolves it: it stopped, nothing
   * failed. A plugin whose `inject` services are not all provided resolves it
   * at once and starts when they are. A handle whose `ready` is never read
   * reports a failed start on `kernel/plugin-error` (on the console when
   * nothing listens) instead: no unhandled rejection.
   */
  readonly ready: Promise<void>;
  /**
   * Stop the plugin and undo every registration it made. Idempotent: every
   * call settles with the first, once everything is undone. Rejects, after
   * that, with what an undo (an effect's, its child plugins' and scopes'
   * included) threw; an `AggregateError` when several did. A call made by
   * one of those undo functions (before its first `await`) would wait for
   * itself: it settles at once instead, resolved.
   */
  dispose(): Promise<void>;
}

/**
 * The methods every harness context has; services are added as properties by
 * {@linkcode HarnessContext}.
 */
export interface ContextCore<E extends object, S extends object> {
  /** The raw Cordis context, for interop with plain Cordis plugins. */
  readonly raw: Context;
  /** The scope this context belongs to, if any. */
  readonly scope: ScopeInfo | undefined;
  /**
   * Listen to an event. The listener is removed when this context's plugin
   * (or scope) is disposed, or when the returned function is called.
   *
   * @throws {HarnessError} `CONTEXT_DISPOSED` when this context's plugin or scope is disposed (as are `effect`,
   *   `provide` and `plugin`).
   */
  on<K extends EventName<E>>(name: K, listener: E[K], options?: ListenerOptions): () => void;
  /**
   * Notify every admitted listener, synchronously. A listener that throws does
   * not stop the others; its error is reported on `kernel/listener-error`.
   */
  emit<K extends EventName<E>>(name: K, ...args: EventArgs<E, K>): void;
  /** Run every admitted listener concurrently and wait for all of them. */
  parallel<K extends EventName<E>>(name: K, ...args: EventArgs<E, K>): Promise<void>;
  /**
   * Run admitted listeners one after another; the first that returns a value
   * other than `undefined`, `null` or `false` ends the run and its value is returned.
   * A listener removed while the run waits (its plugin disposed by an earlier
   * listener, say) is skipped, here and in {@linkcode serialEach}.
   */
  serial<K extends EventName<E>>(
    name: K,
    ...args: EventArgs<E, K>
  ): Promise<Awaited<EventResult<E, K>> | undefined>;
  /**
   * Run every admitted listener one after another, each awaited before the
   * next; what they return is ignored (unlike {@linkcode serial}, a value ends
   * nothing). A listener that throws or rejects ends the run with its error.
   */
  serialEach<K extends EventName<E>>(name: K, ...args: EventArgs<E, K>): Promise<void>;
  /**
   * Run admitted listeners as middleware: each receives the arguments and a
   * `next()` that calls the following listener; the last argument given here
   * is the innermost `next`.
   */
  waterfall<K extends EventName<E>>(name: K, ...args: EventArgs<E, K>): EventResult<E, K>;
  /**
   * Register a reversible effect: `execute` returns its own undo, run when this context's plugin or scope is
   * disposed (a failure of it rejects that `dispose()`) or when the returned function is called (it rejects that
   * call).
   *
   * @throws {HarnessError} `CONTEXT_DISPOSED` when this context's plugin or scope is disposed.
   */
  effect(execute: () => () => void | Promise<void>, label?: string): () => Promise<void>;
  /**
   * Provide a service under `name` for as long as this context's plugin lives.
   *
   * @throws {HarnessError} `SERVICE_ALREADY_PROVIDED` when another plugin provides `name`, `CONTEXT_DISPOSED`
   *   when this context's plugin or scope is disposed.
   */
  provide<K extends keyof S & string>(name: K, value: S[K]): () => void;
  /** The service under `name`, or `undefined`. */
  get<K extends keyof S & string>(name: K): S[K] | undefined;
  /**
   * The service under `name`.
   *
   * @throws {HarnessError} `SERVICE_MISSING` when it is not provided.
   */
  service<K extends keyof S & string>(name: K): S[K];
  /**
   * Start a child plugin on this context.
   *
   * @throws {HarnessError} `CONTEXT_DISPOSED` when this context's plugin or scope is disposed.
   */
  plugin<C>(plugin: HarnessPlugin<C, E, S>, config: C): PluginHandle;
  /** Start a child plugin that takes no configuration. */
  plugin(plugin: HarnessPlugin<void, E, S>): PluginHandle;
}

/**
 * A typed view of a Cordis context: typed event dispatch, typed services
 * (`ctx.tools`, `ctx.sessions`, …) and scope-filtered admission.
 *
 * Admission rule: an event dispatched from a context in scope `X` reaches the
 * listeners registered outside every scope and those registered in `X` or one
 * of its ancestors; an event dispatched outside every scope reaches every
 * listener (it is a global announcement).
 */
export type HarnessContext<E extends object = KernelEvents, S extends object = object> =
  & ContextCore<E, S>
  & Readonly<Partial<S>>;

const SCOPE: unique symbol = Symbol.for("@dsh/harness/scope");

type RawWithScope = Context & { [SCOPE]?: ScopeInfo };

/** Whether a listener registered in `listenerScope` hears an event from `dispatchScope`. */
export function admits(listenerScope: ScopeInfo | undefined, dispatchScope: ScopeInfo | undefined): boolean {
  if (listenerScope === undefined || dispatchScope === undefined) return true;
  for (let s: ScopeInfo | undefined = dispatchScope; s !== undefined; s = s.parent) {
    if (s === listenerScope) return true;
  }
  return false;
}

/** Mark a raw context (and the contexts derived from it) as belonging to `scope`. */
export function tagScope(raw: Context, scope: ScopeInfo): void {
  (raw as RawWithScope)[SCOPE] = scope;
}

function dispatcherOf(scope: ScopeInfo | undefined): object {
  return {
    [Context.filter]: (hookCtx: Context) => admits((hookCtx as RawWithScope)[SCOPE], scope),
  };
}

/**
 * Cordis's own `get`, called on its reflect service with this context as
 * `ctx`: what the bound `raw.get` does, without going through the traceable
 * proxy of the service (whose traps walk property descriptors for `ctx`,
 * `_getImpl` and `store` on every lookup: ~8 K instructions each on Node).
 * The proxy hands the method this same context as `ctx` when the context is
 * not a shadow; otherwise, or when the service does not look as expected,
 * `undefined` (and the bound `raw.get` is used).
 */
function directLookup(raw: Context): ((name: string) => unknown) | undefined {
  const raws = raw as unknown as Record<symbol, unknown>;
  if (raws[symbols.shadow] !== undefined) return undefined;
  const reflect = (raw.reflect as unknown as Record<symbol, unknown>)?.[symbols.original] as
    | { get?: unknown; _getImpl?: unknown; store?: unknown }
    | undefined;
  if (
    typeof reflect?.get !== "function" || typeof reflect._getImpl !== "function" || typeof reflect.store !== "object"
  ) {
    return undefined;
  }
  return (reflect.get as (name: string) => unknown).bind(Object.create(reflect, { ctx: { value: raw } }));
}

/** Key of a context's cached `get` (a symbol, so no service name can shadow it). */
const LOOKUP: unique symbol = Symbol("lookup");

/** Key of a context's listener check (see emitterOf()). */
const IDLE: unique symbol = Symbol("idle");

/**
 * Internal (not exported by the package): `(a, b) => ctx.emit(name, a, b)`,
 * with `ctx.emit` read once. For a harness context it first asks the event
 * registry whether anything listens to `name` and returns at once when nothing
 * does, without the bound call and the rest-argument array of `emit` (the
 * session store emits `session/event` for every committed event, chunks
 * included, and by default nothing listens). Listeners added or removed later
 * are seen: the registry is asked on every call.
 *
 * @param ctx A harness context, or any object with an `emit` method.
 * @param name The event.
 * @returns The emitter.
 */
export function emitterOf(
  ctx: { emit(name: never, ...args: never[]): void },
  name: string,
): (a: unknown, b: unknown) => void {
  const emit = ctx.emit as unknown as (name: string, a: unknown, b: unknown) => void;
  const isIdle = idleCheckOf(ctx);
  if (isIdle === undefined) return (a, b) => emit(name, a, b);
  return (a, b) => {
    if (!isIdle(name)) emit(name, a, b);
  };
}

/** A harness context's listener check (`[IDLE]`), or `undefined` for any other object. */
function idleCheckOf(ctx: object): ((name: string) => boolean) | undefined {
  const idle = (ctx as Record<symbol, unknown>)[IDLE];
  return typeof idle === "function" ? idle as (name: string) => boolean : undefined;
}

/**
 * Internal (not exported by the package): whether `ctx` is a harness context
 * in which nothing listens to `name` now; false for any other object.
 *
 * @param ctx A harness context, or any other dispatch object.
 * @param name The event.
 * @returns Whether an emit of `name` would reach no listener.
 */
export function unheard(ctx: object, name: string): boolean {
  return idleCheckOf(ctx)?.(name) === true;
}

const wrappers = new WeakMap<object, object>();

function toCordisPlugin(
  plugin: HarnessPlugin<unknown, object, object>,
): { name?: string; inject?: string[]; apply(ctx: Context, config: unknown): unknown } {
  const cached = wrappers.get(plugin);
  if (cached) return cached as ReturnType<typeof toCordisPlugin>;
  const apply = typeof plugin === "function" ? plugin : plugin.apply.bind(plugin);
  const name = typeof plugin === "function" ? plugin.pluginName ?? plugin.name : plugin.name;
  const wrapped = {
    name,
    inject: plugin.inject ? [...plugin.inject] : undefined,
    apply: (raw: Context, config: unknown) => {
      // Cordis turns a thrown value that is not an Error into `new Error(value)`: "[object Object]", its code lost.
      try {
        const started = apply(wrapContext(raw), config);
        if (started === undefined || started === null || typeof started.then !== "function") return started;
        return Promise.resolve(started).then(undefined, (error: unknown) => {
          throw asError(error, name);
        });
      } catch (error) {
        throw asError(error, name);
      }
    },
  };
  wrappers.set(plugin, wrapped);
  return wrapped;
}

/**
 * What a plugin threw, as an Error: itself when it is one (has a stack); otherwise a `HarnessError` with its code (when it has a
 * string `code`, else `PLUGIN_FAILED`) and its message, the value as the cause.
 */
function asError(thrown: unknown, plugin: string | undefined): unknown {
  const fields = typeof thrown === "object" && thrown !== null
    ? thrown as { code?: unknown; message?: unknown; stack?: unknown }
    : {};
  // An Error, or what looks like one (from another realm): Cordis keeps it as it is.
  if (thrown instanceof Error || typeof fields.stack === "string") return thrown;
  return new HarnessError(
    typeof fields.code === "string" && fields.code !== "" ? fields.code : "PLUGIN_FAILED",
    typeof fields.message === "string"
      ? fields.message
      : `Plugin "${plugin || "anonymous"}" threw ${
        typeof thrown === "string" ? JSON.stringify(thrown) : String(thrown)
      }`,
    { cause: thrown, details: { plugin: plugin || "anonymous" } },
  );
}

class CoreImpl<E extends object, S extends object> implements ContextCore<E, S> {
  readonly raw: Context;
  readonly #dispatcher: object;
  // Read once: every property read on a Cordis context goes through its
  // tracing proxy, which allocates; dispatch is on the hot path of the loop.
  readonly #events: Context["events"];
  /**
   * `raw.get`, read once. Cordis serves `get` through a mixin accessor whose
   * proxy trap builds a `new Error()` (for its stack) on every read: about
   * 15 µs on Node against 1 µs for the bound function kept here.
   */
  readonly [LOOKUP]: (name: string) => unknown;

  /** Whether nothing listens to `name` (for emitterOf()). */
  readonly [IDLE] = (name: string): boolean => this.#idle(name);

  /**
   * The event registry's listener lists, read once: `events` is itself a
   * Cordis tracing proxy whose trap walks property descriptors on every read,
   * and every emit asks whether a name has listeners. Cordis creates this
   * record once per registry and only changes its entries.
   */
  readonly #hooks: Context["events"]["_hooks"];

  constructor(raw: Context) {
    this.raw = raw;
    this.#dispatcher = dispatcherOf(this.scope);
    // Reads of Cordis's own accessors (no user code): no stack captures.
    this.#events = withoutStacks(() => raw.events);
    this.#hooks = this.#events._hooks;
    this[LOOKUP] = withoutStacks(() => directLookup(raw) ?? raw.get);
  }

  #idle(name: string): boolean {
    return !(this.#hooks[name]?.length);
  }

  get scope(): ScopeInfo | undefined {
    return (this.raw as RawWithScope)[SCOPE];
  }

  on<K extends EventName<E>>(name: K, listener: E[K], options?: ListenerOptions): () => void {
    // Registration runs only Cordis's code: no stack captures (_without_stacks.ts).
    const dispose = registering(
      this.raw,
      `listen to "${name}"`,
      () => withoutStacks(() => this.raw.on(name as never, listener as never, { prepend: options?.prepend ?? false })),
    );
    return () => void dispose();
  }

  emit<K extends EventName<E>>(name: K, ...args: EventArgs<E, K>): void {
    // Cordis's own emit stops at the first listener that throws; observers
    // must not be able to break the emitter, so each call is contained.
    if (this.#idle(name)) return;
    const callbacks = this.#events.dispatch("emit", [this.#dispatcher, name, ...args]);
    for (const callback of callbacks) {
      try {
        containRejection(callback(...args), (error) => this.#reportListenerError(name, error));
      } catch (error) {
        this.#reportListenerError(name, error);
      }
    }
  }

  #reportListenerError(name: string, error: unknown): void {
    if (name !== "kernel/listener-error" && !this.#idle("kernel/listener-error")) {
      // The reporters this context's dispatches reach, as for any other event: one agent's reporter does not hear
      // another agent's listeners fail.
      const reporters = this.#events.dispatch("emit", [this.#dispatcher, "kernel/listener-error", name, error]);
      if (reporters.length > 0) {
        for (const reporter of reporters) {
          // A failing error reporter is ignored, an async one that rejects too (nothing would hear it).
          try {
            containRejection(reporter(name, error), ignore);
          } catch { /* ignored */ }
        }
        return;
      }
    }
    console.error(`[@dsh/harness] a listener of "${name}" threw:`, error);
  }

  parallel<K extends EventName<E>>(name: K, ...args: EventArgs<E, K>): Promise<void> {
    if (this.#idle(name)) return Promise.resolve();
    return this.#events.parallel(this.#dispatcher, name, ...args);
  }

  serial<K extends EventName<E>>(
    name: K,
    ...args: EventArgs<E, K>
  ): Promise<Awaited<EventResult<E, K>> | undefined> {
    if (this.#idle(name)) return Promise.resolve(undefined);
    return this.#inTurn(name, args, true) as Promise<Awaited<EventResult<E, K>> | undefined>;
  }

  async serialEach<K extends EventName<E>>(name: K, ...args: EventArgs<E, K>): Promise<void> {
    if (this.#idle(name)) return;
    await this.#inTurn(name, args, false);
  }

  /**
   * The admitted listeners, one after another; with `bail`, the first value other than `undefined`, `null` or
   * `false` ends the run. A listener removed while the run waits (its plugin disposed by an earlier listener, say)
   * is skipped: it would run after its own teardown. Cordis's own serial run calls every listener it started with.
   */
  async #inTurn(name: string, args: readonly unknown[], bail: boolean): Promise<unknown> {
    type Hook = { readonly callback: AnyFunction; readonly ctx: Context; readonly global?: boolean };
    if (this.#hooks["internal/dispatch"]?.length) {
      this.#events.emit("internal/dispatch", "serial", name, args, this.#dispatcher);
    }
    const filter = (this.#dispatcher as { [Context.filter]: (ctx: Context) => boolean })[Context.filter];
    const admitted = (this.#hooks[name] as Hook[] | undefined ?? []).filter((hook) => hook.global || filter(hook.ctx));
    for (const hook of admitted) {
      if (!(this.#hooks[name] as Hook[] | undefined)?.includes(hook)) continue;
      const result = await Reflect.apply(hook.callback, this.#dispatcher, args);
      if (bail && result !== undefined && result !== null && result !== false) return result;
    }
    return undefined;
  }

  waterfall<K extends EventName<E>>(name: K, ...args: EventArgs<E, K>): EventResult<E, K> {
    if (this.#idle(name)) return (args[args.length - 1] as () => EventResult<E, K>)();
    return this.#events.waterfall(this.#dispatcher, name, ...args);
  }

  effect(execute: () => () => void | Promise<void>, label?: string): () => Promise<void> {
    // An undo that fails while its plugin or scope is disposed is the failure of that dispose() call (Cordis would
    // log it to its buffer, which nobody reads); called through the function returned here, it is the caller's.
    let direct = false;
    const dispose = registering(this.raw, "register an effect", () =>
      this.raw.effect(() => {
        const undo = execute();
        if (typeof undo !== "function") return undo;
        return () => direct ? undo() : this.#undoing(undo, label);
      }, label));
    return async () => {
      direct = true;
      await dispose();
    };
  }

  /** Run an effect's undo for a disposal: a failure goes to the dispose() call under way, or is reported. */
  #undoing(undo: () => void | Promise<void>, label: string | undefined): void | Promise<void> {
    const failed = (error: unknown) =>
      teardownFailed(this.raw, label, error, (plugin) => this.#reportPluginError(plugin, error));
    try {
      // A dispose() it calls (before its first await) is known to come from inside the disposal: see runForTeardown.
      const result = runForTeardown(this.raw, undo);
      if (result !== null && typeof result === "object" && typeof (result as Promise<void>).then === "function") {
        return Promise.resolve(result).then(undefined, failed);
      }
    } catch (error) {
      failed(error);
    }
  }

  provide<K extends keyof S & string>(name: K, value: S[K]): () => void {
    refuseIfClosed(this.raw, `provide "${name}"`);
    let dispose: () => unknown;
    try {
      dispose = withoutStacks(() => this.raw.provide(name, value));
    } catch (error) {
      // Cordis says so with a plain Error; a tool of a taken name has its code, and so does this.
      if (error instanceof Error && / has been registered/.test(error.message)) {
        throw new HarnessError("SERVICE_ALREADY_PROVIDED", `Service "${name}" is already provided`, {
          cause: error,
          details: { service: name },
        });
      }
      throw disposedContextError(error, `provide "${name}"`);
    }
    return () => void dispose();
  }

  get<K extends keyof S & string>(name: K): S[K] | undefined {
    return this[LOOKUP](name) as S[K] | undefined;
  }

  service<K extends keyof S & string>(name: K): S[K] {
    const value = this[LOOKUP](name);
    if (value === undefined) {
      throw new HarnessError("SERVICE_MISSING", `Service "${name}" is not provided in this context`, {
        details: { service: name },
      });
    }
    return value as S[K];
  }

  plugin<C>(plugin: HarnessPlugin<C, E, S>, config?: C): PluginHandle {
    // The one stack Cordis uses should the plugin's `apply` throw (it names
    // where the plugin was installed) is captured here, with the limit in
    // force: from this frame down, as Cordis's own would have been. The rest
    // of the registration makes no stack captures (_without_stacks.ts).
    const outerStack = buildOuterStack(-1);
    const cordisPlugin = toCordisPlugin(plugin as HarnessPlugin<unknown, object, object>);
    const fiber = registering(
      this.raw,
      `start plugin "${cordisPlugin.name || "anonymous"}"`,
      () =>
        withoutStacks(() =>
          (this.raw.plugin as (p: unknown, c: unknown, outer: () => string[]) => ReturnType<Context["plugin"]>)(
            cordisPlugin,
            config,
            outerStack,
          )
        ),
    );
    const own = Object.getPrototypeOf(fiber) as { uid: number | null };
    const ready = Promise.resolve(fiber).then(() => undefined, (error: unknown) => {
      // Cut short by its own (or an ancestor's) disposal: a clean stop.
      if (own.uid === null && isInactiveContextError(error)) return;
      throw error;
    });
    // Always handled: a caller that reads `ready` hears a failure from it; for one that never does, it is reported.
    let observed = false;
    ready.catch((error) => {
      if (!observed) this.#reportPluginError(cordisPlugin.name || "anonymous", error);
    });
    return {
      get ready() {
        observed = true;
        return ready;
      },
      dispose: disposer(fiber, `plugin "${cordisPlugin.name || "anonymous"}"`),
    };
  }

  #reportPluginError(plugin: string, error: unknown): void {
    if (!this.#idle("kernel/plugin-error")) {
      const callbacks = this.#events.dispatch("emit", [this.#dispatcher, "kernel/plugin-error", plugin, error]);
      if (callbacks.length > 0) {
        for (const callback of callbacks) {
          try {
            containRejection(
              callback(plugin, error),
              (failure) => this.#reportListenerError("kernel/plugin-error", failure),
            );
          } catch (failure) {
            this.#reportListenerError("kernel/plugin-error", failure);
          }
        }
        return;
      }
    }
    console.error(`[@dsh/harness] plugin "${plugin}" failed:`, error);
  }
}

function ignore(): void {}

/**
 * Internal (not exported by the package): Cordis's refusal of a registration on a disposed context (a plugin's or a
 * scope's, such as a disposed agent's `ctx`) as a `HarnessError` `CONTEXT_DISPOSED`, the refusal as its cause; any
 * other error as it is.
 *
 * @param error What the registration threw.
 * @param what What was refused, after "Cannot".
 * @returns The error to throw.
 */
export function disposedContextError(error: unknown, what: string): unknown {
  if (!(error instanceof Error) || (error as { code?: unknown }).code !== "INACTIVE_EFFECT") return error;
  return new HarnessError("CONTEXT_DISPOSED", `Cannot ${what}: the context is disposed`, { cause: error });
}

/** The root contexts of disposed harnesses: Cordis cannot dispose a root, so the wrapper refuses for it. */
const closedRoots = new WeakSet<object>();

/**
 * Refuse every later registration on the root context `ctx` (its plugins, listeners, services, effects and scopes),
 * as `CONTEXT_DISPOSED`: what `harness.dispose()` does once it has unwound everything registered there.
 */
export function closeRoot(ctx: ContextCore<object, object>): void {
  closedRoots.add(ctx.raw);
}

/** Throws `CONTEXT_DISPOSED` for a registration on a closed root (see {@linkcode closeRoot}). */
function refuseIfClosed(raw: object, what: string): void {
  if (closedRoots.has(raw)) {
    throw new HarnessError("CONTEXT_DISPOSED", `Cannot ${what}: the harness is disposed`);
  }
}

/** Run a registration; a refusal because the context is disposed is thrown as `CONTEXT_DISPOSED`. Internal. */
export function registering<T>(raw: object, what: string, register: () => T): T {
  refuseIfClosed(raw, what);
  try {
    return register();
  } catch (error) {
    throw disposedContextError(error, what);
  }
}

/** Whether `error` says a registration was refused because its context is disposed. */
function isInactiveContextError(error: unknown): boolean {
  return HarnessError.isInstance(error, "CONTEXT_DISPOSED") ||
    (error instanceof Error && (error as { code?: unknown }).code === "INACTIVE_EFFECT");
}

/**
 * View a raw Cordis context as a {@linkcode HarnessContext}. Services become
 * properties read through the kernel, so they appear and vanish with the
 * plugins that provide them.
 *
 * @param raw A Cordis context (from `new Context()` or a plugin).
 * @returns The typed view.
 */
export function wrapContext<E extends object = KernelEvents, S extends object = object>(
  raw: Context,
): HarnessContext<E, S> {
  const core = new CoreImpl<E, S>(raw);
  const bound = new Map<string | symbol, unknown>();
  return new Proxy(core, {
    get(target, prop) {
      if (typeof prop === "symbol" || prop in target) {
        const value = Reflect.get(target, prop, target);
        if (typeof value !== "function") return value;
        // Methods are bound to the real object: they use #private state.
        let fn = bound.get(prop);
        if (fn === undefined) bound.set(prop, fn = value.bind(target));
        return fn;
      }
      return core[LOOKUP](prop);
    },
    has(target, prop) {
      return prop in target || (typeof prop === "string" && core[LOOKUP](prop) !== undefined);
    },
  }) as unknown as HarnessContext<E, S>;
}

/** What a Cordis fiber holds that is read here: its registrations' undo functions (oldest first), its parent. */
interface FiberRegistrations {
  readonly _disposables?: Iterable<() => unknown>;
  readonly parent?: { readonly fiber?: unknown };
  readonly name?: string;
}

/** The failures of the undo functions run by a dispose() call under way, by the fiber it disposes. */
const teardownSinks = new WeakMap<object, unknown[]>();

/**
 * An undo of `raw`'s fiber failed: the failure goes to the nearest dispose() call under way for that fiber or an
 * enclosing one (a plugin's, a scope's, the harness's); with none (a plugin stopped because a service it injects
 * went away), it is reported.
 */
function teardownFailed(raw: Context, label: string | undefined, error: unknown, report: (plugin: string) => void) {
  const owner = withoutStacks(() => raw.fiber) as unknown as FiberRegistrations;
  for (let fiber: FiberRegistrations | undefined = owner; fiber !== undefined;) {
    const sink = teardownSinks.get(fiber);
    if (sink !== undefined) {
      sink.push(error);
      return;
    }
    const parent = withoutStacks(() => fiber!.parent?.fiber) as FiberRegistrations | undefined;
    fiber = parent === fiber ? undefined : parent;
  }
  report(`${owner.name ?? "anonymous"}${label === undefined ? "" : ` (${label})`}`);
}

/** Throw the failures met: one as itself, several as an `AggregateError`. */
function throwFailures(failures: readonly unknown[], what: string): void {
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, `Disposing ${what} failed in several places`);
}

/**
 * Internal (not exported by the package): the `dispose()` of a handle over a Cordis fiber (as `ctx.plugin()`
 * returns it): one disposal, whose every call settles with the first, once it is done; it rejects with what the
 * undo functions of the fiber and of everything under it threw, after every one of them has run. A call from an
 * undo the disposal runs (see `runForTeardown`) settles at once: it would otherwise wait for itself.
 *
 * @param fiber The handle Cordis returned.
 * @param what Its name in an `AggregateError`'s message.
 * @returns The `dispose()` function.
 */
export function disposer(fiber: { dispose(): unknown }, what: string): () => Promise<void> {
  let disposal: Promise<void> | undefined;
  // The fiber itself (Cordis hands out an object derived from it), which its contexts name.
  const own = Object.getPrototypeOf(fiber) as object;
  return () => {
    // A call from an undo this disposal runs (before its first await) would wait for itself: it settles at once.
    if (disposal !== undefined && calledFromTeardown(own)) return Promise.resolve();
    return disposal ??= (async () => {
      const failures: unknown[] = [];
      teardownSinks.set(own, failures);
      try {
        await fiber.dispose();
      } finally {
        teardownSinks.delete(own);
      }
      throwFailures(failures, what);
    })();
  };
}

/**
 * Internal (not exported by the package): undo every registration made through
 * `ctx` that is still in place — plugins, scopes, listeners, services and
 * effects — the most recent first, each awaited before the next (so a plugin
 * started after another is stopped before it, as the plugins' own
 * registrations are). Registrations made while it runs are undone too.
 *
 * @param ctx A context (the root of a harness).
 * @returns The failures of the undo functions (those of the plugins and
 *   scopes under it included), in the order met.
 */
export async function unwind(ctx: ContextCore<object, object>): Promise<unknown[]> {
  const failures: unknown[] = [];
  const fiber = withoutStacks(() => ctx.raw.fiber) as unknown as FiberRegistrations;
  const held = fiber._disposables;
  if (held === undefined || typeof held[Symbol.iterator] !== "function") return failures;
  const tried = new Set<() => unknown>();
  // The undo functions of the plugins and scopes under it report here (see teardownFailed()).
  teardownSinks.set(fiber, failures);
  try {
    for (let pass = 0; pass < MAX_UNWIND_PASSES; pass++) {
      const left = [...held].filter((undo) => !tried.has(undo)).reverse();
      if (left.length === 0) return failures;
      for (const undo of left) {
        tried.add(undo);
        try {
          await undo();
        } catch (error) {
          failures.push(error);
        }
      }
    }
    // Undo functions that keep registering new ones: stopped here rather than run for ever.
    const left = [...held].filter((undo) => !tried.has(undo)).length;
    if (left > 0) {
      failures.push(
        new HarnessError(
          "TEARDOWN_INCOMPLETE",
          `Disposal left ${left} registrations: undo functions kept adding more`,
          {
            details: { left, passes: MAX_UNWIND_PASSES },
          },
        ),
      );
    }
    return failures;
  } finally {
    teardownSinks.delete(fiber);
  }
}

/** How many rounds {@linkcode unwind} makes over registrations added while it runs. */
const MAX_UNWIND_PASSES = 8;

/**
 * Create a new root context: a fresh plugin kernel.
 *
 * @returns The root context, outside every scope.
 *
 * @example Listening and emitting
 * ```ts
 * import { createKernel } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * interface Events { "demo/ping": (n: number) => void }
 * const ctx = createKernel<Events>();
 * const seen: number[] = [];
 * ctx.on("demo/ping", (n) => void seen.push(n));
 * ctx.emit("demo/ping", 7);
 * assert.deepEqual(seen, [7]);
 * ```
 */
export function createKernel<E extends object = KernelEvents, S extends object = object>(): HarnessContext<E, S> {
  return wrapContext<E, S>(withoutStacks(() => new Context()));
}
