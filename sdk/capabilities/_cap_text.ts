// Internal: output caps with an explicit note, shared by the capability tools.

/**
 * The first `max` UTF-16 code units of `text`, one fewer when the cut would fall between the two halves of a
 * surrogate pair (an emoji, a rare CJK character): a lone surrogate is not text, and a provider may refuse it or send
 * it on as U+FFFD.
 */
export function headOf(text: string, max: number): string {
  if (text.length <= max) return text;
  const end = max > 0 && isHighSurrogate(text.charCodeAt(max - 1)) && isLowSurrogate(text.charCodeAt(max))
    ? max - 1
    : max;
  return text.slice(0, end);
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** Cut `text` to `max` characters (never inside a surrogate pair), saying so at the end when it was cut. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = headOf(text, max);
  return `${head}\n[output truncated: showing ${head.length} of ${text.length} characters]`;
}

import type { ServiceSource } from "./service_source.ts";

export type { ServiceSource };

/** The service behind a source. */
export function serviceOf<T extends object>(source: ServiceSource<T>): T {
  return typeof source === "function" ? (source as () => T)() : source;
}
