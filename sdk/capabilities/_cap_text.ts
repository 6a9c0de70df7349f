// Internal: output caps with an explicit note, shared by the capability tools.

/** Cut `text` to `max` characters, saying so at the end when it was cut. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[output truncated: showing ${max} of ${text.length} characters]`;
}

import type { ServiceSource } from "./service_source.ts";

export type { ServiceSource };

/** The service behind a source. */
export function serviceOf<T extends object>(source: ServiceSource<T>): T {
  return typeof source === "function" ? (source as () => T)() : source;
}
