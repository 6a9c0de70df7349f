/**
 * Cold start, import only: a script that imports `@dsh/harness` (the local
 * `mod.ts`) and does nothing else. `scripts/bench.mjs` starts it as a fresh
 * process per sample next to the empty script (`bench/_empty.ts`) on the same
 * runtime: the difference is what loading the SDK's module graph costs.
 *
 * @module
 */

import "../mod.ts";
