// Internal: keep a timer from holding the process open, on every runtime (Node and Bun timers have `unref()`; Deno's
// are numbers, unreffed through `Deno.unrefTimer`).

/** Let the process exit while `timer` is pending. */
export function unrefTimer(timer: unknown): void {
  if (typeof timer === "object" && timer !== null && "unref" in timer) (timer as { unref(): void }).unref();
  else if (typeof timer === "number") {
    (globalThis as { Deno?: { unrefTimer?(id: number): void } }).Deno?.unrefTimer?.(timer);
  }
}
