/**
 * A coding agent: it reads a small project, runs its tests, fixes the bug
 * they show and runs them again — with the file tools and `bash` from
 * `@dsh/harness/tools`, confined to a temporary folder.
 *
 * The model is replayed from a recorded fixture (`examples/fixtures/coding/`)
 * in strict mode, so the run is offline and fails loudly if the prompt, a tool
 * schema or a tool result drifts from the recording. The fixture was recorded
 * once through `recordingAdapter` around a scripted model (`CODING_SCRIPT`);
 * re-record with `node --import tsx examples/coding_agent.ts --record`, then
 * refresh the golden transcript with
 * `DSH_GOLDEN=update node --import tsx --test examples/coding_agent_test.ts`.
 *
 * Permissions: reads run; writes and shell ask by default. The configuration
 * here allows exactly what the agent needs — edits under `src/` and
 * `bash(node test.js)` — so nothing else it might try would run.
 *
 * Run: `node --import tsx examples/coding_agent.ts` (or `deno run -A`, `bun`).
 *
 * @module
 */

import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { createHarness, type LlmAdapter, renderTranscript, type RunResult, type Session } from "../mod.ts";
import { resolveConfig } from "../sdk/config/mod.ts";
import { bashShell, capabilitiesPlugin, localFs, localSubprocess } from "../sdk/capabilities/mod.ts";
import { loadFixture, recordingAdapter, replayAdapter } from "../replay/mod.ts";
import { scriptedAdapter, textResponse, toolCallResponse } from "../testing/mod.ts";

/** The model route of the recording. */
export const MODEL = { provider: "scripted", model: "scripted-model" } as const;

/** The system prompt. */
export const SYSTEM_PROMPT = "You are a careful coding agent. Read before you edit, and run the tests after a change.";

/** The task. */
export const TASK = "The tests of this project fail. Find the bug, fix it, and make sure the tests pass.";

/** The small project the agent works on. */
export const PROJECT: Readonly<Record<string, string>> = {
  "src/math.js": "export function add(a, b) {\n  return a - b;\n}\n",
  "test.js": 'import { add } from "./src/math.js";\n\n' +
    "const got = add(2, 3);\n" +
    "if (got !== 5) {\n  console.log(`FAIL add(2, 3) returned ${got}, expected 5`);\n  process.exit(1);\n}\n" +
    'console.log("ok 1 add");\n',
  "package.json": '{ "type": "module" }\n',
};

/** What the model said when the fixture was recorded (a scripted model stands in for a provider). */
export const CODING_SCRIPT: Parameters<typeof scriptedAdapter>[0] = [
  toolCallResponse([
    { id: "call_1", name: "list_dir", arguments: "{}" },
    { id: "call_2", name: "read_file", arguments: '{"path":"test.js"}' },
    { id: "call_3", name: "read_file", arguments: '{"path":"src/math.js"}' },
  ]),
  toolCallResponse([{ id: "call_4", name: "bash", arguments: '{"command":"node test.js"}' }]),
  toolCallResponse([{
    id: "call_5",
    name: "edit_file",
    arguments: '{"path":"src/math.js","old_string":"return a - b;","new_string":"return a + b;"}',
  }]),
  toolCallResponse([{ id: "call_6", name: "bash", arguments: '{"command":"node test.js"}' }]),
  textResponse("Fixed: `add()` in src/math.js subtracted instead of adding. `node test.js` passes now."),
];

/** The fixture directory. */
export const FIXTURE_DIR: URL = new URL("./fixtures/coding/", import.meta.url);

/** The golden transcript. */
export const GOLDEN_FILE: URL = new URL("./fixtures/coding.golden.md", import.meta.url);

/** What {@linkcode runCodingAgent} resolves to. */
export interface CodingRun {
  readonly session: Session;
  readonly result: RunResult;
  /** The project's files after the run. */
  readonly files: Readonly<Record<string, string>>;
}

/**
 * Write the project into a fresh temporary folder, run the agent on it with
 * the given adapters, and remove the folder.
 */
export async function runCodingAgent(adapters: readonly LlmAdapter[]): Promise<CodingRun> {
  const dir = await mkdtemp(join(tmpdir(), "dsh-coding-"));
  try {
    for (const [path, text] of Object.entries(PROJECT)) {
      await mkdir(join(dir, path, ".."), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    const fs = localFs({ root: dir });
    let n = 0;
    let clock = Date.UTC(2026, 0, 1);
    const harness = await createHarness({
      adapters,
      config: resolveConfig([{
        name: "coding",
        value: {
          model: MODEL,
          adapters: { deepseek: null },
          permissions: [
            { tool: "edit_file(src/*)", action: "allow" },
            { tool: "bash(node test.js)", action: "allow" },
          ],
        },
      }]),
      system: SYSTEM_PROMPT,
      plugins: [[capabilitiesPlugin, {
        fs,
        subprocess: localSubprocess(),
        shell: bashShell({ subprocess: localSubprocess(), cwd: dir }),
      }]],
      newId: () => `coding-${++n}`,
      now: () => clock++,
    });
    try {
      const agent = await harness.createAgent({ id: "coding" });
      const result = await agent.run(TASK);
      const files: Record<string, string> = {};
      for (const path of Object.keys(PROJECT)) files[path] = (await fs.readText(path)).text;
      return { session: agent.session, result, files };
    } finally {
      await harness.dispose();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Record the fixture: the scripted model behind a recording adapter. */
export async function recordFixture(): Promise<CodingRun> {
  const recorder = recordingAdapter(scriptedAdapter(CODING_SCRIPT, { provider: MODEL.provider }));
  const run = await runCodingAgent([recorder]);
  await recorder.save(FIXTURE_DIR, run.session);
  return run;
}

/** Replay the fixture in strict mode. */
export async function replayFixture(): Promise<CodingRun> {
  const replay = replayAdapter({ fixture: await loadFixture(FIXTURE_DIR), strict: true });
  const run = await runCodingAgent(replay.adapters);
  replay.assertConsumed();
  return run;
}

const entry = process.argv[1];
if (entry !== undefined && resolve(entry) === fileURLToPath(import.meta.url)) {
  const record = process.argv.includes("--record");
  const run = record ? await recordFixture() : await replayFixture();
  console.log(renderTranscript(run.session.events, { title: "Coding agent" }));
  console.log(`turn: ${run.result.reason.kind}; src/math.js is now:\n${run.files["src/math.js"]}`);
  console.log(record ? `Recorded ${fileURLToPath(FIXTURE_DIR)}` : "Replayed offline from examples/fixtures/coding/");
}
