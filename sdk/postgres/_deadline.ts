// A wait with an end: PostgreSQL drivers have no deadline of their own by
// default, and with a silent network partition a statement is never answered.

import { unrefTimer } from "../kernel/_unref_timer.ts";

/**
 * Settle as `promise` does, or reject after `ms` with a "no answer" error. The
 * work itself goes on (a statement may still complete on the server); only
 * the wait ends.
 */
export function deadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`PostgreSQL did not answer within ${ms} ms`)), ms);
    unrefTimer(timer);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}
