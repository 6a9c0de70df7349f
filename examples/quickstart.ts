/**
 * The main job: a multi-turn agent with a real tool, streaming its answers
 * to the terminal, then printing each turn's outcome and usage.
 *
 * Offline by default: the model is the replay adapter playing a session
 * recorded with the real DeepSeek adapter (`examples/fixtures/weather/`), in
 * strict mode, so a change to the prompt or the tool schema shows up as a
 * diff. With `--live` and `DEEPSEEK_API_KEY` set, the same program talks to
 * DeepSeek.
 *
 * Run with `npm run demo` or `deno task demo` (add `-- --live` for DeepSeek).
 *
 * @module
 */

import process from "node:process";
import type { AgentUpdate, LlmAdapter, RunResult, TokenUsage } from "../mod.ts";
import { deepseekAdapter } from "../adapters/mod.ts";
import { loadFixture, type ReplayAdapter, replayAdapter } from "../replay/mod.ts";
import { fixtureDir, runScenario, SCENARIOS } from "./weather_agent.ts";

const live = process.argv.includes("--live");
const color = process.stdout.isTTY === true && !process.env.NO_COLOR;
const dim = (text: string) => (color ? `\x1b[2m${text}\x1b[22m` : text);
const bold = (text: string) => (color ? `\x1b[1m${text}\x1b[22m` : text);
const write = (text: string) => process.stdout.write(text);

const scenario = SCENARIOS[0];
let adapters: readonly LlmAdapter[];
let replay: ReplayAdapter | undefined;
if (live) {
  const apiKey = process.env.DEEPSEEK_API_KEY;
  if (!apiKey) {
    console.error("--live needs DEEPSEEK_API_KEY in the environment");
    process.exit(2);
  }
  adapters = [deepseekAdapter({ apiKey })];
  console.log(dim("Talking to DeepSeek (live).\n"));
} else {
  replay = replayAdapter({ fixture: await loadFixture(fixtureDir(scenario.name)), strict: true });
  adapters = replay.adapters;
  console.log(dim(`Replaying examples/fixtures/${scenario.name}/ offline (pass --live to talk to DeepSeek).\n`));
}

/** What is being streamed now, to put line breaks between blocks. */
let streaming: "reasoning" | "text" | undefined;

function endLine(): void {
  if (streaming !== undefined) write("\n");
  streaming = undefined;
}

function show(update: AgentUpdate): void {
  if (update.kind === "delta") {
    if (update.blockType === "tool-call") return;
    if (streaming !== update.blockType) {
      const afterReasoning = streaming === "reasoning";
      endLine();
      if (afterReasoning) write("\n");
      streaming = update.blockType;
      if (update.blockType === "reasoning") write(dim("thinking: "));
    }
    write(update.blockType === "reasoning" ? dim(update.text.replace(/\n+/g, " ")) : update.text);
    return;
  }
  if (update.kind !== "event") return;
  const { event } = update;
  if (event.type === "llm/retry") {
    // What the failed attempt streamed is discarded: the next attempt's text starts over.
    endLine();
    console.log(dim(`(the request failed: ${event.data.failure.code}; trying again, the answer starts over)`));
  } else if (event.type === "tool/call") {
    endLine();
    console.log(`${dim("→")} ${event.data.name}(${event.data.arguments})`);
  } else if (event.type === "tool/result") {
    endLine();
    const text = event.data.message.content
      .flatMap((b) => (b.type === "tool-result" ? b.content : []))
      .map((b) => (b.type === "text" ? b.text : `[${b.type}]`))
      .join(" ");
    console.log(`${dim("←")} ${text}`);
  }
}

function describeUsage(usage: TokenUsage): string {
  const cached = usage.cacheReadTokens ? ` (+${usage.cacheReadTokens} cached)` : "";
  const reasoning = usage.reasoningTokens ? ` (${usage.reasoningTokens} reasoning)` : "";
  return `${usage.inputTokens} input${cached}, ${usage.outputTokens} output${reasoning} tokens`;
}

function showResult(result: RunResult): void {
  endLine();
  const reason = result.reason.kind === "error"
    ? `error ${result.reason.error.code}: ${result.reason.error.message}`
    : result.reason.kind === "aborted"
    ? `aborted (${result.reason.reason})`
    : result.reason.kind;
  console.log(dim(`\nturn ${result.turn}: ${reason} · ${describeUsage(result.usage)}\n`));
}

const { results } = await runScenario(scenario, adapters, {
  instantRetries: !live,
  onTurn: (input) => console.log(`${bold(">")} ${bold(input)}\n`),
  onUpdate: show,
  onResult: showResult,
});

if (replay !== undefined) {
  try {
    replay.assertConsumed();
    console.log(dim(`${results.length} turns replayed from the fixture; no network was used.`));
  } catch (error) {
    console.error((error as Error).message);
    process.exitCode = 1;
  }
}
if (results.some((r) => r.reason.kind === "error")) process.exitCode = 1;
