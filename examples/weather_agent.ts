/**
 * The demo agent shared by the quickstart, the fixture recorder and the
 * golden test: a system prompt, a real `weather` tool, the model route, and
 * the recorded scenarios (the user's turns, in order).
 *
 * @module
 */

import {
  type AgentUpdate,
  createHarness,
  DEFAULT_RETRY_POLICY,
  defineTool,
  type LlmAdapter,
  type RunResult,
  type Session,
  type ToolDefinition,
  TurnFailedError,
} from "../mod.ts";
import { z } from "zod";

/** The system prompt of the demo agent. */
export const SYSTEM_PROMPT =
  "You are a concise assistant. Use the weather tool for questions about the weather; answer other questions directly.";

/** The route the fixtures were recorded on. */
export const MODEL = { provider: "deepseek", model: "deepseek-reasoner" } as const;

/** What the weather tool knows: a small built-in table, so the demo runs offline. */
export interface Conditions {
  readonly conditions: string;
  readonly temperatureC: number;
  readonly windKph: number;
}

/** The built-in weather table, keyed by lower-case city name. */
export const WEATHER_TABLE: Readonly<Record<string, Conditions>> = {
  "san francisco": { conditions: "Morning fog, clearing to sun by noon", temperatureC: 17, windKph: 19 },
  "paris": { conditions: "Light rain", temperatureC: 11, windKph: 14 },
  "tokyo": { conditions: "Clear skies", temperatureC: 22, windKph: 8 },
};

const conditionsSchema = z.object({
  location: z.string(),
  conditions: z.string(),
  temperatureC: z.number(),
  windKph: z.number(),
});

/**
 * The `weather` tool: current conditions for a city, from a table.
 *
 * @param table The table to read (tests pass a changed one).
 * @returns The tool definition.
 */
export function weatherTool(table: Readonly<Record<string, Conditions>> = WEATHER_TABLE): ToolDefinition {
  return defineTool({
    name: "weather",
    description: "Get the current weather for a city.",
    parameters: z.object({ location: z.string().describe("The city, e.g. San Francisco") }),
    output: {
      schema: conditionsSchema,
      render: (_args, value) =>
        `${value.location}: ${value.conditions}, ${value.temperatureC} °C, wind ${value.windKph} km/h`,
    },
    execute: ({ location }) => {
      const found = table[location.trim().toLowerCase()];
      if (found === undefined) throw new Error(`No weather data for ${location}`);
      return { location, ...found };
    },
  });
}

/** One user turn of a scenario, and the provider wire streams that answered it when it was recorded. */
export interface ScenarioTurn {
  readonly input: string;
  /** One wire stream per model call of the turn (used only by `record_fixtures.ts`). */
  readonly wire: readonly string[];
}

/** A recorded conversation. */
export interface Scenario {
  /** The fixture directory name under `examples/fixtures/`, also the session id. */
  readonly name: string;
  readonly turns: readonly ScenarioTurn[];
}

/** The recorded scenarios. */
export const SCENARIOS: readonly Scenario[] = [
  {
    name: "weather",
    turns: [
      { input: "What's the weather like in San Francisco?", wire: ["deepseek-tool-call", "weather-answer"] },
      { input: 'How many times does the letter "r" appear in "strawberry"?', wire: ["deepseek-reasoning"] },
    ],
  },
  {
    name: "holiday",
    turns: [
      { input: 'How many "r"s are in the word "strawberry"?', wire: ["deepseek-reasoning"] },
      { input: "Thanks! Is it foggy in San Francisco today?", wire: ["deepseek-tool-call", "weather-answer"] },
      // The provider fails once with HTTP 503; the loop retries within the step.
      { input: "Invent a new holiday and describe its traditions.", wire: ["http-503", "deepseek-text"] },
    ],
  },
];

/** The fixture directory of a scenario. */
export function fixtureDir(name: string): URL {
  return new URL(`./fixtures/${name}/`, import.meta.url);
}

/** The golden transcript of a scenario. */
export function goldenFile(name: string): URL {
  return new URL(`./fixtures/${name}.golden.md`, import.meta.url);
}

/** Options of {@linkcode runScenario}. */
export interface RunScenarioOptions {
  /** The weather tool's table. */
  readonly table?: Readonly<Record<string, Conditions>>;
  /** Called with every live update (events, streaming deltas, status). */
  readonly onUpdate?: (update: AgentUpdate) => void;
  /** Called before each turn with its input. */
  readonly onTurn?: (input: string, index: number) => void;
  /** Called after each turn with its outcome. */
  readonly onResult?: (result: RunResult) => void;
  /**
   * Retry at once instead of sleeping between attempts (recording and replay;
   * the recorded delays stay in the log).
   *
   * @default {true}
   */
  readonly instantRetries?: boolean;
}

/** What {@linkcode runScenario} resolves to. */
export interface ScenarioRun {
  /** The session, as the run left it. */
  readonly session: Session;
  /** One outcome per turn. */
  readonly results: readonly RunResult[];
}

/**
 * Run a scenario's turns on a fresh harness over `adapters`, with
 * deterministic ids and clock (so a run is reproducible up to the model).
 *
 * @param scenario The scenario.
 * @param adapters The model adapters (replay, recording or live).
 * @param options Tool table and callbacks.
 * @returns The session and the turn outcomes.
 */
export async function runScenario(
  scenario: Scenario,
  adapters: readonly LlmAdapter[],
  options: RunScenarioOptions = {},
): Promise<ScenarioRun> {
  let n = 0;
  let clock = Date.UTC(2026, 0, 1);
  const harness = await createHarness({
    adapters,
    model: MODEL,
    tools: [weatherTool(options.table)],
    system: SYSTEM_PROMPT,
    newId: () => `${scenario.name}-${++n}`,
    now: () => clock++,
    // No jitter, so that a replayed retry records the same delay as the recording.
    retryPolicy: { ...DEFAULT_RETRY_POLICY, jitter: 0 },
    ...(options.instantRetries === false ? {} : { sleep: () => Promise.resolve() }),
  });
  try {
    const agent = await harness.createAgent({ id: scenario.name });
    const updates = options.onUpdate === undefined ? undefined : (async () => {
      for await (const update of agent.subscribe()) options.onUpdate!(update);
    })();
    const results: RunResult[] = [];
    for (const [index, turn] of scenario.turns.entries()) {
      options.onTurn?.(turn.input, index);
      // run() rejects when a turn ends in error (TURN_FAILED); the demo reports that outcome like the others.
      const result = await agent.run(turn.input).catch((error: unknown) => {
        if (error instanceof TurnFailedError) return error.result;
        throw error;
      });
      results.push(result);
      options.onResult?.(result);
    }
    await harness.dispose();
    await updates;
    return { session: agent.session, results };
  } finally {
    await harness.dispose();
  }
}
