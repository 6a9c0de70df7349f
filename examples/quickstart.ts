/**
 * The main job, for now: create a kernel, register a plugin that provides a
 * service and listens to an event, and print what happened.
 *
 * Run with `npm run demo` or `deno task demo`.
 *
 * @module
 */

import { createKernel, createScope, type HarnessContext, type KernelEvents } from "../mod.ts";

interface Events extends KernelEvents {
  "demo/greet": (name: string, next: () => string) => string;
}
interface Services {
  greeter: { greet(name: string): string };
}

const ctx: HarnessContext<Events, Services> = createKernel<Events, Services>();

const handle = ctx.plugin((pctx: HarnessContext<Events, Services>) => {
  pctx.provide("greeter", { greet: (name) => pctx.waterfall("demo/greet", name, () => `Hello, ${name}`) });
  pctx.effect(() => {
    console.log("plugin started: provides the greeter service");
    return () => console.log("plugin disposed: greeter service withdrawn");
  });
});
await handle.ready;

const scope = createScope(ctx, "agent-1");
scope.ctx.on("demo/greet", (_name, next) => `${next()}! (decorated in scope ${scope.key})`);

console.log(ctx.service("greeter").greet("world"));
await scope.dispose();
console.log(ctx.service("greeter").greet("world"));
await handle.dispose();
console.log(`greeter after dispose: ${ctx.greeter === undefined ? "gone" : "still there"}`);
