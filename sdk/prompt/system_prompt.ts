/**
 * `SystemPrompt` (`ctx.systemPrompt`): ordered, scoped contributions assembled
 * into the system text and the tool schemas of a request.
 *
 * Longer than the house limit: `SystemPrompt` is one registry whose cached
 * assembly (`assembleForRequest`) reads its private layers and providers; what
 * holds no registry state lives beside it (`_prompt_values.ts`, `_tool_schemas.ts`).
 *
 * @module
 */

import type { ScopeInfo } from "../kernel/harness_context.ts";
import { HarnessError } from "../kernel/harness_error.ts";
import type { ToolSchema } from "../llm/messages.ts";
import { admittedListeners, announce, runWaterfall } from "./_scoped_dispatch.ts";
import { byOrder, chainOf, checkAborted, isThenable, sameItems } from "./_prompt_values.ts";
import { checkSchemas, pickTools, projections, projectSchema, providerFailed } from "./_tool_schemas.ts";
import type {
  AssembleContext,
  AssembledPrompt,
  PromptAssembly,
  PromptContext,
  PromptPart,
  PromptSection,
  PromptToolProvider,
  PromptVariable,
} from "./prompt_contributions.ts";
import type { RegistrationOwner, ServiceHost } from "./registration_owner.ts";
import { PROMPT_VARIABLE_NAME, renderPrompt } from "./render_prompt.ts";

interface Layer {
  readonly sections: Map<string, PromptSection>;
  readonly contexts: Map<string, PromptContext>;
  readonly variables: Map<string, PromptVariable>;
}

interface ProviderEntry {
  readonly provider: PromptToolProvider;
  readonly scope: ScopeInfo | undefined;
  readonly seq: number;
}

type Kind = "sections" | "contexts" | "variables";

/** What the loop's cached assembly keeps per scope (see {@linkcode assembleForRequest}). */
interface FastEntry {
  /** The registration version the entry was made for. */
  readonly version: number;
  /** False when something of the scope is dynamic: every assembly takes the full path. */
  readonly cacheable: boolean;
  /** The scope's tool providers, in call order, with their depth in the scope chain. */
  readonly providers: readonly { readonly provider: PromptToolProvider; readonly depth: number }[];
  /** The rendered static system text ("" for none). */
  readonly system: string;
  /** The static non-empty contexts, or undefined. */
  readonly contexts: readonly { readonly name: string; readonly text: string }[] | undefined;
  /** Each provider's last schemas, as returned (compared element by element). */
  raws: (readonly unknown[])[] | undefined;
  /** The last result, frozen; handed out again while the providers give the same schema objects. */
  result: AssembledPrompt | undefined;
}

const GLOBAL_SCOPE = {};

let assembleNow: (prompt: SystemPrompt, context: AssembleContext) => AssembledPrompt | Promise<AssembledPrompt>;

/**
 * Internal (the agent loop's): the assembly of {@linkcode SystemPrompt.assemble},
 * synchronous and cached when it can be. When every section, context and
 * variable of the scope is static text and no `system-prompt/assemble`
 * listener applies, the rendered text is kept per scope until a registration
 * changes; the tool providers are still called on every assembly (with the
 * same context), and while they return the same frozen schema objects the
 * same frozen result is handed out again. Anything else — a dynamic text or
 * variable, a listener, a provider answering with a promise, another
 * `SystemPrompt` implementation — takes the full (asynchronous) path, with
 * the same results and errors.
 *
 * @param prompt The registry (the `systemPrompt` service in force).
 * @param context The scope and signal.
 * @returns The assembly (frozen when it came from the cache), or a promise of it.
 */
export function assembleForRequest(
  prompt: SystemPrompt,
  context: AssembleContext,
): AssembledPrompt | Promise<AssembledPrompt> {
  if (
    !(prompt instanceof SystemPrompt) || prompt.assemble !== SystemPrompt.prototype.assemble ||
    prompt.assembly !== SystemPrompt.prototype.assembly
  ) {
    return prompt.assemble(context);
  }
  return assembleNow(prompt, context);
}

/**
 * The system prompt registry (the `ctx.systemPrompt` service).
 *
 * Assembly: collect global and scoped contributions (the nearest scope's entry
 * shadows same-named ones farther out), evaluate dynamic texts and variables
 * for this assembly, gather tool schemas from every provider of the scope
 * chain (on a duplicate name the nearest provider wins), order sections and
 * contexts by `order` then name, run the `system-prompt/assemble` waterfall,
 * then restore the complete section if one applies.
 *
 * @example Sections, a variable and a tool provider
 * ```ts
 * import { createKernel, SystemPrompt } from "@dsh/harness";
 * import assert from "node:assert/strict";
 *
 * const prompt = new SystemPrompt(createKernel());
 * prompt.section({ name: "persona", order: 0, text: "You help with {{project}}." });
 * prompt.section({ name: "identity", order: -100, text: "You are dsh." });
 * prompt.variable({ name: "project", value: "the harness" });
 * prompt.tools({ schemas: () => [{ name: "read", description: "Read a file", parameters: { type: "object" } }] });
 * const { system, tools } = await prompt.assemble();
 * assert.equal(system, "You are dsh.\n\nYou help with the harness.");
 * assert.deepEqual(tools?.map((t) => t.name), ["read"]);
 * assert.deepEqual(await new SystemPrompt(createKernel()).assemble(), {});
 * ```
 */
export class SystemPrompt {
  readonly #host: ServiceHost;
  readonly #layers = new Map<ScopeInfo | undefined, Layer>();
  #providers: ProviderEntry[] = [];
  #seq = 0;
  /** Bumped by every registration and disposal: the cached assemblies of older versions are stale. */
  #version = 0;
  readonly #fast = new WeakMap<object, FastEntry>();

  static {
    assembleNow = (prompt, context) => prompt.#assembleNow(context);
  }

  /**
   * Create a registry hosted by `host` (normally the plugin context of
   * `systemPromptPlugin`): global contributions live as long as it.
   *
   * @param host The hosting context.
   */
  constructor(host: ServiceHost) {
    this.#host = host;
  }

  /**
   * Register a section in the scope of `owner` (global when omitted).
   *
   * @param section The section.
   * @param owner The registering context; the section goes away with it.
   * @returns A disposer.
   * @throws {HarnessError} `INVALID_ARGS` for a bad name, order or text;
   *   `PROMPT_ENTRY_EXISTS` for a duplicate name or a second complete section in one scope.
   */
  section(section: PromptSection, owner?: RegistrationOwner): () => void {
    this.#checkPart(section, "section");
    if (section.complete === true) {
      const layer = this.#layers.get(owner?.scope);
      const other = [...(layer?.sections.values() ?? [])].find((s) => s.complete === true);
      if (other) {
        throw new HarnessError("PROMPT_ENTRY_EXISTS", `Scope already has the complete section "${other.name}"`);
      }
    }
    return this.#add("sections", section.name, section, owner);
  }

  /**
   * Register a dynamic context in the scope of `owner` (global when omitted).
   *
   * @param context The context.
   * @param owner The registering context; the entry goes away with it.
   * @returns A disposer.
   * @throws {HarnessError} `INVALID_ARGS` or `PROMPT_ENTRY_EXISTS`, as for sections.
   */
  context(context: PromptContext, owner?: RegistrationOwner): () => void {
    this.#checkPart(context, "context");
    return this.#add("contexts", context.name, context, owner);
  }

  /**
   * Register a variable in the scope of `owner` (global when omitted).
   *
   * @param variable The variable.
   * @param owner The registering context; the variable goes away with it.
   * @returns A disposer.
   * @throws {HarnessError} `INVALID_ARGS` for a bad name or value, `PROMPT_ENTRY_EXISTS` for a duplicate.
   */
  variable(variable: PromptVariable, owner?: RegistrationOwner): () => void {
    if (typeof variable?.name !== "string" || !PROMPT_VARIABLE_NAME.test(variable.name)) {
      throw new HarnessError("INVALID_ARGS", `Prompt variable name ${JSON.stringify(variable?.name)} is invalid`);
    }
    if (typeof variable.value !== "string" && typeof variable.value !== "function") {
      throw new HarnessError("INVALID_ARGS", `Prompt variable "${variable.name}" has no value`);
    }
    return this.#add("variables", variable.name, variable, owner);
  }

  /**
   * Register a tool-schema provider in the scope of `owner` (global when omitted).
   *
   * @param provider The provider.
   * @param owner The registering context; the provider goes away with it.
   * @returns A disposer.
   * @throws {HarnessError} `INVALID_ARGS` for a provider without `schemas` or with a non-finite order.
   */
  tools(provider: PromptToolProvider, owner?: RegistrationOwner): () => void {
    if (typeof provider?.schemas !== "function") {
      throw new HarnessError("INVALID_ARGS", "A tool provider needs a schemas() function");
    }
    if (provider.order !== undefined && !Number.isFinite(provider.order)) {
      throw new HarnessError("INVALID_ARGS", "A tool provider's order must be a finite number");
    }
    const entry: ProviderEntry = { provider, scope: owner?.scope, seq: this.#seq++ };
    return this.#own(owner, "prompt tools", () => {
      this.#providers.push(entry);
      this.#version++;
      announce(this.#host, "system-prompt/change");
      return () => {
        this.#providers = this.#providers.filter((p) => p !== entry);
        this.#version++;
        announce(this.#host, "system-prompt/change");
      };
    });
  }

  /**
   * Resolve every contribution for one assembly and run the
   * `system-prompt/assemble` waterfall.
   *
   * @param context The scope and signal.
   * @returns The authoritative assembly (a fresh object).
   * @throws {HarnessError} `ABORTED` when the signal aborts, `PROMPT_ASSEMBLY_INVALID`
   *   when a listener returns something that is not an assembly, `PROMPT_TEXT_FAILED`
   *   when a dynamic text, variable or provider throws.
   */
  async assembly(context: AssembleContext = {}): Promise<PromptAssembly> {
    checkAborted(context);
    const chain = chainOf(context.scope);
    const resolve = <T>(kind: Kind): Map<string, T> => {
      const out = new Map<string, T>();
      for (const scope of chain) {
        for (const [name, entry] of this.#layers.get(scope)?.[kind] ?? []) out.set(name, entry as T);
      }
      return out;
    };
    const evaluate = async (what: string, fn: () => unknown): Promise<unknown> => {
      try {
        return await fn();
      } catch (cause) {
        throw new HarnessError("PROMPT_TEXT_FAILED", `Prompt ${what} failed to evaluate`, { cause });
      }
    };
    const part = (kind: string, entry: PromptSection | PromptContext, value: unknown): PromptPart => {
      if (typeof value !== "string") {
        throw new HarnessError("PROMPT_TEXT_FAILED", `Prompt ${kind} "${entry.name}" did not produce a string`);
      }
      return {
        name: entry.name,
        order: entry.order,
        text: value,
        ...("complete" in entry && entry.complete === true ? { complete: true } : {}),
      };
    };
    // A static text is a part at once; only a dynamic one is awaited.
    const text = (kind: string, entry: PromptSection | PromptContext): PromptPart | Promise<PromptPart> =>
      typeof entry.text === "string"
        ? part(kind, entry, entry.text)
        : evaluate(`${kind} "${entry.name}"`, () => (entry.text as (c: AssembleContext) => unknown)(context))
          .then((value) => part(kind, entry, value));
    const texts = async (kind: string, entries: (PromptSection | PromptContext)[]): Promise<PromptPart[]> => {
      const out = entries.map((entry) => text(kind, entry));
      return out.some((p) => p instanceof Promise) ? await Promise.all(out) : out as PromptPart[];
    };

    const resolved = resolve<PromptSection>("sections");
    const sections = [...resolved.values()];
    const effectiveComplete = this.#completeSection(chain, resolved);
    const parts = effectiveComplete
      ? [await text("section", effectiveComplete)]
      : (await texts("section", sections)).sort(byOrder);
    const contexts = (await texts("context", [...resolve<PromptContext>("contexts").values()]))
      .filter((c) => c.text !== "")
      .sort(byOrder);
    const variables: Record<string, string> = {};
    for (const variable of resolve<PromptVariable>("variables").values()) {
      const value = typeof variable.value === "string"
        ? variable.value
        : await evaluate(`variable "${variable.name}"`, () =>
          (variable.value as (c: AssembleContext) => unknown)(context));
      if (typeof value === "string") variables[variable.name] = value;
    }
    const tools = await this.#tools(context, chain, evaluate);
    checkAborted(context);

    const assembly: PromptAssembly = { sections: parts, contexts, variables, tools };
    const result = await runWaterfall<Promise<PromptAssembly>>(
      admittedListeners(this.#host, context.scope, "system-prompt/assemble"),
      [assembly, context],
      () => Promise.resolve(assembly),
    );
    if (
      typeof result !== "object" || result === null || !Array.isArray(result.sections) ||
      !Array.isArray(result.contexts) || !Array.isArray(result.tools) ||
      typeof result.variables !== "object" || result.variables === null
    ) {
      throw new HarnessError("PROMPT_ASSEMBLY_INVALID", "A system-prompt/assemble listener returned no assembly");
    }
    checkAborted(context);
    return {
      sections: effectiveComplete ? [parts[0]] : [...result.sections],
      contexts: [...result.contexts],
      variables: { ...result.variables },
      tools: result.tools.map(projectSchema),
    };
  }

  /**
   * Assemble and render: the sections joined by blank lines with variables
   * interpolated strictly, the tool schemas, and the non-empty contexts. Empty
   * system text, an empty tool list and no contexts are absent.
   *
   * @param context The scope and signal.
   * @returns The system text and tools for the request header, and the contexts to log.
   * @throws {HarnessError} as {@linkcode SystemPrompt.assembly}, and `PROMPT_VARIABLE_MISSING`
   *   or `PROMPT_TEMPLATE_INVALID` from {@linkcode renderPrompt}.
   */
  async assemble(context: AssembleContext = {}): Promise<AssembledPrompt> {
    const assembly = await this.assembly(context);
    const joined = assembly.sections.map((s) => s.text).filter((t) => t.trim() !== "").join("\n\n");
    const system = renderPrompt(joined, assembly.variables);
    const out: { -readonly [K in keyof AssembledPrompt]: AssembledPrompt[K] } = {};
    if (system !== "") out.system = system;
    if (assembly.tools.length > 0) out.tools = assembly.tools;
    const contexts = assembly.contexts.filter((c) => c.text.trim() !== "").map((c) => ({ name: c.name, text: c.text }));
    if (contexts.length > 0) out.contexts = contexts;
    return out;
  }

  async #tools(
    context: AssembleContext,
    chain: (ScopeInfo | undefined)[],
    evaluate: (what: string, fn: () => unknown) => Promise<unknown>,
  ): Promise<ToolSchema[]> {
    const providers = this.#scopeProviders(chain);
    const projected: ToolSchema[][] = [];
    for (const { provider } of providers) {
      // Each provider's schemas are checked before the next provider is called.
      const schemas = checkSchemas(await evaluate("tool provider", () => provider.schemas(context)));
      projected.push((schemas as ToolSchema[]).map(projectSchema));
    }
    return pickTools(projected, providers.map((p) => p.depth));
  }

  /** The tool providers of a scope chain, in call order (`order`, then registration), with their depth. */
  #scopeProviders(chain: (ScopeInfo | undefined)[]): { provider: PromptToolProvider; depth: number }[] {
    return this.#providers
      .filter((p) => chain.includes(p.scope))
      .sort((a, b) => (a.provider.order ?? 0) - (b.provider.order ?? 0) || a.seq - b.seq)
      .map((p) => ({ provider: p.provider, depth: chain.indexOf(p.scope) }));
  }

  /** See {@linkcode assembleForRequest}. */
  #assembleNow(context: AssembleContext): AssembledPrompt | Promise<AssembledPrompt> {
    checkAborted(context);
    const scope = context.scope;
    if (admittedListeners(this.#host, scope, "system-prompt/assemble").length > 0) return this.assemble(context);
    const key = scope ?? GLOBAL_SCOPE;
    let entry = this.#fast.get(key);
    if (entry === undefined || entry.version !== this.#version) {
      entry = this.#fastEntry(scope);
      this.#fast.set(key, entry);
    }
    if (!entry.cacheable) return this.assemble(context);
    return this.#fastTools(context, entry, 0, [], []);
  }

  /** The static part of a scope's assembly, when nothing in it is dynamic. */
  #fastEntry(scope: ScopeInfo | undefined): FastEntry {
    const version = this.#version;
    const chain = chainOf(scope);
    const resolve = <T>(kind: Kind): Map<string, T> => {
      const out = new Map<string, T>();
      for (const s of chain) for (const [name, entry] of this.#layers.get(s)?.[kind] ?? []) out.set(name, entry as T);
      return out;
    };
    const none: FastEntry = {
      version,
      cacheable: false,
      providers: [],
      system: "",
      contexts: undefined,
      raws: undefined,
      result: undefined,
    };
    const resolved = resolve<PromptSection>("sections");
    const complete = this.#completeSection(chain, resolved);
    const sections = complete ? [complete] : [...resolved.values()];
    const contexts = [...resolve<PromptContext>("contexts").values()];
    const variables: Record<string, string> = {};
    for (const variable of resolve<PromptVariable>("variables").values()) {
      if (typeof variable.value !== "string") return none;
      variables[variable.name] = variable.value;
    }
    if (sections.some((s) => typeof s.text !== "string") || contexts.some((c) => typeof c.text !== "string")) {
      return none;
    }
    // As assemble(): sections by order then name, blank ones left out, joined and rendered.
    const parts = (sections as { name: string; order: number; text: string }[]).slice().sort(byOrder);
    let system: string;
    try {
      system = renderPrompt(parts.map((s) => s.text).filter((t) => t.trim() !== "").join("\n\n"), variables);
    } catch {
      return none; // the full path reports it, on every assembly
    }
    const texts = (contexts as { name: string; order: number; text: string }[])
      .filter((c) => c.text.trim() !== "")
      .sort(byOrder)
      .map((c) => Object.freeze({ name: c.name, text: c.text }));
    return {
      version,
      cacheable: true,
      providers: this.#scopeProviders(chain),
      system,
      contexts: texts.length > 0 ? Object.freeze(texts) : undefined,
      raws: undefined,
      result: undefined,
    };
  }

  /** Call the providers from `index` on, synchronously while they answer with arrays. */
  #fastTools(
    context: AssembleContext,
    entry: FastEntry,
    index: number,
    results: (readonly unknown[])[],
    projected: ToolSchema[][],
  ): AssembledPrompt | Promise<AssembledPrompt> {
    const providers = entry.providers;
    for (let i = index; i < providers.length; i++) {
      let schemas: unknown;
      try {
        schemas = providers[i].provider.schemas(context);
      } catch (cause) {
        throw providerFailed(cause);
      }
      if (isThenable(schemas)) {
        return Promise.resolve(schemas).then(
          (value) => {
            this.#take(value, results, projected);
            return this.#fastTools(context, entry, i + 1, results, projected);
          },
          (cause) => {
            throw providerFailed(cause);
          },
        );
      }
      this.#take(schemas, results, projected);
    }
    return this.#fastResult(context, entry, results, projected);
  }

  /** A provider's answer, checked and projected schema by schema (as the full path does, provider by provider). */
  #take(schemas: unknown, results: (readonly unknown[])[], projected: ToolSchema[][]): void {
    const list = checkSchemas(schemas);
    const out: ToolSchema[] = [];
    for (let i = 0; i < list.length; i++) {
      const raw = list[i];
      const known = typeof raw === "object" && raw !== null ? projections.get(raw) : undefined;
      out.push(known ?? projectSchema(raw as ToolSchema));
    }
    results.push(list);
    projected.push(out);
  }

  #fastResult(
    context: AssembleContext,
    entry: FastEntry,
    results: (readonly unknown[])[],
    projected: ToolSchema[][],
  ): AssembledPrompt {
    checkAborted(context);
    const raws = entry.raws;
    let reuse = entry.result !== undefined && raws !== undefined && raws.length === results.length;
    for (let i = 0; reuse && i < results.length; i++) {
      const list = results[i];
      if (!sameItems(list, raws![i])) reuse = false;
      // Only schemas with a shared projection (frozen, plain data) are known not to have changed.
      for (let k = 0; reuse && k < list.length; k++) if (!projections.has(list[k] as object)) reuse = false;
    }
    if (reuse) return entry.result!;
    const tools = pickTools(projected, entry.providers.map((p) => p.depth));
    const out: { -readonly [K in keyof AssembledPrompt]: AssembledPrompt[K] } = {};
    if (entry.system !== "") out.system = entry.system;
    if (tools.length > 0) out.tools = Object.freeze(tools);
    if (entry.contexts !== undefined) out.contexts = entry.contexts;
    const result = Object.freeze(out);
    entry.raws = results.map((list) => list.slice());
    entry.result = result;
    return result;
  }

  /** The complete section of the nearest layer that has one not shadowed by name. */
  #completeSection(chain: (ScopeInfo | undefined)[], resolved: Map<string, PromptSection>): PromptSection | undefined {
    for (let i = chain.length - 1; i >= 0; i--) {
      for (const section of this.#layers.get(chain[i])?.sections.values() ?? []) {
        if (section.complete === true && resolved.get(section.name) === section) return section;
      }
    }
    return undefined;
  }

  #checkPart(part: PromptSection | PromptContext, kind: string): void {
    if (typeof part?.name !== "string" || part.name === "") {
      throw new HarnessError("INVALID_ARGS", `A prompt ${kind} needs a non-empty name`);
    }
    if (typeof part.order !== "number" || !Number.isFinite(part.order)) {
      throw new HarnessError("INVALID_ARGS", `Prompt ${kind} "${part.name}" needs a finite order`);
    }
    if (typeof part.text !== "string" && typeof part.text !== "function") {
      throw new HarnessError("INVALID_ARGS", `Prompt ${kind} "${part.name}" needs a text`);
    }
  }

  #add<K extends Kind>(
    kind: K,
    name: string,
    entry: Layer[K] extends Map<string, infer T> ? T : never,
    owner?: RegistrationOwner,
  ): () => void {
    const scope = owner?.scope;
    if (this.#layers.get(scope)?.[kind].has(name)) {
      throw new HarnessError(
        "PROMPT_ENTRY_EXISTS",
        `Prompt ${kind.slice(0, -1)} "${name}" is already registered ${scope ? `in scope "${scope.key}"` : "globally"}`,
      );
    }
    return this.#own(owner, `prompt ${kind}`, () => {
      let layer = this.#layers.get(scope);
      if (layer === undefined) {
        this.#layers.set(scope, layer = { sections: new Map(), contexts: new Map(), variables: new Map() });
      }
      const map = layer[kind] as Map<string, unknown>;
      map.set(name, entry);
      this.#version++;
      announce(this.#host, "system-prompt/change");
      return () => {
        if (map.get(name) === entry) map.delete(name);
        this.#version++;
        announce(this.#host, "system-prompt/change");
      };
    });
  }

  #own(owner: RegistrationOwner | undefined, label: string, add: () => () => void): () => void {
    const dispose = (owner ?? this.#host).effect(add, label);
    return () => void dispose();
  }
}
