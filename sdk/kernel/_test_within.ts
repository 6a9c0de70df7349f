// Test support (not published): how a promise settled within a time limit, for tests of calls that must not hang.

/** `promise`'s outcome, or "still waiting" after `ms` (the timer cleared either way, so it holds no process open). */
export async function within(promise: Promise<unknown>, ms = 2000): Promise<unknown> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise((resolve) => timer = setTimeout(() => resolve("still waiting"), ms));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** How `promise` settled within `ms`: "resolved", the error it rejected with, or "still waiting". */
export function settledWithin(promise: Promise<unknown>, ms = 2000): Promise<unknown> {
  return within(promise.then(() => "resolved", (error) => error), ms);
}
