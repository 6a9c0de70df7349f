// The package bundles for the edge: the core, ./adapters and ./http build with
// esbuild for `platform=browser` and `platform=neutral` without Node built-ins
// (file storage reaches `node:fs/promises` and `node:zlib` lazily, through
// dynamic imports that run only when it is used), and the Workers-style handler
// of examples/edge_worker.ts, bundled with everything it needs, serves a turn.
// Sizes are not asserted here: `npm run bench` prints them (bench/bundle_size.ts).

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as esbuild from "esbuild";

const root = fileURLToPath(new URL(".", import.meta.url));
const BUILTINS = new Set(builtinModules);
const isBuiltin = (path: string) => path.startsWith("node:") || BUILTINS.has(path) || BUILTINS.has(path.split("/")[0]);
/** The only files that may reach a built-in, and only through `import()`: file storage's seams. */
const LAZY_NODE = new Set(["sdk/persistence/_fs.ts", "sdk/persistence/_zstd.ts"]);
const PLATFORMS = ["browser", "neutral"] as const;

type Metafile = esbuild.Metafile;

async function build(
  entry: string,
  options: esbuild.BuildOptions = {},
): Promise<esbuild.BuildResult & { metafile: Metafile }> {
  return await esbuild.build({
    entryPoints: [join(root, entry)],
    absWorkingDir: root,
    bundle: true,
    format: "esm",
    target: "es2022",
    write: false,
    metafile: true,
    logLevel: "silent",
    ...options,
  }) as esbuild.BuildResult & { metafile: Metafile };
}

/** Every import of a Node built-in in the bundle, as `importer -> path (kind)`. */
function builtinImports(metafile: Metafile): { importer: string; path: string; kind: string }[] {
  return Object.entries(metafile.inputs).flatMap(([importer, input]) =>
    input.imports.filter((i) => isBuiltin(i.path)).map((i) => ({ importer, path: i.path, kind: i.kind }))
  );
}

function assertNoEagerBuiltins(metafile: Metafile, what: string): void {
  for (const use of builtinImports(metafile)) {
    assert.ok(
      use.kind === "dynamic-import" && LAZY_NODE.has(use.importer),
      `${what} imports ${use.path} from ${use.importer} (${use.kind}); only file storage may, lazily`,
    );
  }
}

describe("edge bundles", () => {
  for (const entry of ["mod.ts", "adapters/mod.ts", "sdk/http/mod.ts"]) {
    for (const platform of PLATFORMS) {
      it(`${entry} bundles for platform=${platform} with no Node built-in imported eagerly`, async () => {
        // The peers stay external, as in an application that bundles its own copies.
        const result = await build(entry, { platform, external: ["zod", "hono"] });
        assert.deepEqual(result.errors, []);
        assertNoEagerBuiltins(result.metafile, entry);
      });
    }
  }

  for (const platform of PLATFORMS) {
    it(`the config subpath bundles for platform=${platform}: files are read only through a lazy import`, async () => {
      // resolveConfig() reads no file; loadConfig() reads through node:fs/promises, imported when it does (and the
      // file storage kind the configuration may name, as the core does).
      const result = await build("sdk/config/mod.ts", {
        platform,
        mainFields: ["module", "main"],
        external: ["zod"],
      });
      assert.deepEqual(result.errors, []);
      for (const use of builtinImports(result.metafile)) {
        assert.ok(
          use.kind === "dynamic-import" &&
            (use.importer === "sdk/config/_node_files.ts" || LAZY_NODE.has(use.importer)),
          `sdk/config imports ${use.path} from ${use.importer} (${use.kind})`,
        );
      }
    });
  }

  it("importing the core loads no file storage code: fileStorage() imports it on first use", async () => {
    const result = await build("mod.ts", { platform: "neutral", external: ["zod"] });
    const inputs = result.metafile.inputs;
    const statically = new Set<string>();
    const visit = (path: string) => {
      if (statically.has(path) || inputs[path] === undefined) return;
      statically.add(path);
      for (const i of inputs[path].imports) if (i.kind === "import-statement" && !i.external) visit(i.path);
    };
    visit("mod.ts");
    const lazy = /^sdk\/persistence\/(_file_session_storage|_file_log|_log_decoder|_zstd|_log_migrations)\.ts$/;
    assert.deepEqual([...statically].filter((p) => lazy.test(p)), []);
    assert.ok(statically.has("sdk/persistence/file_storage.ts"));
    assert.ok(
      inputs["sdk/persistence/file_storage.ts"].imports.some((i) =>
        i.kind === "dynamic-import" && i.path === "sdk/persistence/_file_session_storage.ts"
      ),
    );
  });

  it("the core needs no zod: only tools that use it and the config subpath import it", async () => {
    // zod is a peer of tools written with it; the core bundled without it stays small (bench/RESULTS.md, mod.ts).
    const result = await build("mod.ts", { platform: "neutral" });
    const zod = Object.keys(result.metafile.inputs).filter((path) => /node_modules\/zod\//.test(path));
    assert.deepEqual(zod, []);
  });

  it("file storage is the only code that reaches node: modules in the core bundle", async () => {
    const result = await build("mod.ts", { platform: "neutral", external: ["zod"] });
    const reached = builtinImports(result.metafile).map((u) => `${u.importer} ${u.path}`).sort();
    assert.deepEqual(reached, ["sdk/persistence/_fs.ts node:fs/promises", "sdk/persistence/_zstd.ts node:zlib"]);
  });

  for (const platform of PLATFORMS) {
    it(`the worker handler bundles whole for platform=${platform}; the validator and timeline page are lazy chunks`, async () => {
      // Code splitting, as Vite, Rollup or `esbuild --splitting` do: what loads at start is the entry chunk.
      const result = await build("examples/edge_worker.ts", {
        platform,
        splitting: true,
        outdir: join(root, "dist-edge-test"),
        minify: true,
      });
      assert.deepEqual(result.errors, []);
      assertNoEagerBuiltins(result.metafile, "the worker");
      const outputs = Object.entries(result.metafile.outputs);
      const entry = outputs.find(([, o]) => o.entryPoint !== undefined)!;
      const initial = [
        entry,
        ...entry[1].imports.filter((i) => i.kind === "import-statement")
          .map((i) => outputs.find(([path]) => path === i.path)!),
      ];
      const loaded = initial.flatMap(([, o]) => Object.keys(o.inputs));
      assert.ok(loaded.some((p) => p.includes("node_modules/hono/")), "hono is bundled");
      assert.ok(loaded.some((p) => p.includes("node_modules/zod/")), "zod is bundled");
      assert.equal(loaded.filter((p) => p.includes("@cfworker/json-schema")).length, 0, "no validator at start");
      // It is a chunk of its own, loaded by the first raw JSON Schema tool.
      const all = outputs.flatMap(([, o]) => Object.keys(o.inputs));
      assert.ok(all.some((p) => p.includes("@cfworker/json-schema")), "the validator is a lazy chunk");
      assert.equal(loaded.filter((p) => p.includes("node_modules/ajv")).length, 0);
      // The timeline page and its script load with the first page request.
      assert.equal(
        loaded.filter((p) => /^sdk\/http\/view\/_view_(page|client_script|styles)\.ts$/.test(p)).length,
        0,
        "no timeline page at start",
      );
      assert.ok(all.includes("sdk/http/view/_view_client_script.ts"));
    });
  }

  it("a program of createHarness() and defineTool() from the root, split, loads no storage or configuration code at start", async () => {
    // esbuild follows every import of a module whose named re-exports a program uses: mod.ts re-exports the rooms'
    // listings with `export *` so that it is never such a module (bench/PROFILE.md, s18f).
    const result = await esbuild.build({
      stdin: {
        contents:
          'import { createHarness, defineTool } from "./mod.ts";\nexport const used = [createHarness, defineTool];\n',
        resolveDir: root,
        sourcefile: "program.ts",
        loader: "ts",
      },
      absWorkingDir: root,
      bundle: true,
      format: "esm",
      platform: "neutral",
      target: "es2022",
      splitting: true,
      outdir: join(root, "dist-edge-test"),
      write: false,
      metafile: true,
      logLevel: "silent",
      external: ["zod", "cordis"],
    });
    const outputs = Object.entries(result.metafile.outputs);
    const entry = outputs.find(([, o]) => o.entryPoint !== undefined)!;
    const initial = [
      entry,
      ...entry[1].imports.filter((i) => i.kind === "import-statement" && !i.external)
        .map((i) => outputs.find(([path]) => path === i.path)!),
    ];
    const loaded = initial.flatMap(([, o]) => Object.keys(o.inputs));
    const all = outputs.flatMap(([, o]) => Object.keys(o.inputs));
    assert.ok(loaded.includes("sdk/harness.ts") && loaded.includes("sdk/tools/define_tool.ts"));
    for (
      const lazy of ["sdk/_apply_config.ts", "sdk/persistence/memory_storage.ts", "sdk/persistence/_writer_lease.ts"]
    ) {
      assert.ok(all.includes(lazy), `${lazy} is in a lazy chunk`);
      assert.ok(!loaded.includes(lazy), `${lazy} loads at start`);
    }
  });

  it("the bundled worker handler serves a session and a turn through an OpenAI-compatible endpoint", async () => {
    const result = await build("examples/edge_worker.ts", { platform: "neutral", minify: true });
    // As one file (wrangler's default) every dynamic import is inlined: what the worker never names must be
    // unreachable. File storage (node:fs, zstd, the log decoder) comes only through fileStorage()/fileStorageKind().
    const inputs = Object.values(result.metafile.outputs).flatMap((o) =>
      Object.entries(o.inputs).filter(([, i]) => i.bytesInOutput > 0).map(([path]) => path)
    );
    assert.deepEqual(
      inputs.filter((p) => /^sdk\/persistence\/(file_storage|_file_log|_log_decoder|_zstd|_fs)\.ts$/.test(p)),
      [],
      "no file storage in the worker",
    );
    assert.ok(inputs.includes("sdk/persistence/memory_storage.ts"));
    const dir = mkdtempSync(join(tmpdir(), "dsh-edge-"));
    try {
      const file = join(dir, "worker.mjs");
      writeFileSync(file, result.outputFiles![0].contents);
      const worker = await import(pathToFileURL(file).href);
      const requests: unknown[] = [];
      const sse = [
        { choices: [{ index: 0, delta: { role: "assistant", content: "Hello from " } }] },
        { choices: [{ index: 0, delta: { content: "the edge" }, finish_reason: "stop" }] },
        { choices: [], usage: { prompt_tokens: 12, completion_tokens: 4, total_tokens: 16 } },
      ].map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") + "data: [DONE]\n\n";
      const fakeFetch = ((_url: string, init: RequestInit) => {
        requests.push(JSON.parse(String(init.body)));
        return Promise.resolve(new Response(sse, { headers: { "content-type": "text/event-stream" } }));
      }) as typeof fetch;
      const handle: (request: Request) => Promise<Response> = worker.createEdgeHandler(
        { HARNESS_TOKEN: "secret", OPENAI_API_KEY: "k", OPENAI_MODEL: "m-1" },
        { fetch: fakeFetch },
      );
      const headers = { authorization: "Bearer secret", "content-type": "application/json" };
      const created = await handle(new Request("http://edge/sessions", { method: "POST", headers, body: "{}" }));
      assert.equal(created.status, 201);
      const { id } = await created.json();
      const sent = await handle(
        new Request(`http://edge/sessions/${id}/messages`, {
          method: "POST",
          headers,
          body: JSON.stringify({ content: "Hi", wait: true }),
        }),
      );
      assert.equal(sent.status, 200);
      const body = await sent.json();
      assert.equal(body.result.text, "Hello from the edge");
      assert.equal(body.result.reason.kind, "completed");
      assert.equal(requests.length, 1);
      assert.equal((requests[0] as { model: string }).model, "m-1");
      const denied = await handle(new Request("http://edge/sessions"));
      assert.equal(denied.status, 401);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
