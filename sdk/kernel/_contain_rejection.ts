// A listener declared to return nothing may still be an async function: a
// promise it returns that rejects would be an unhandled rejection (the end of
// the process on Node and Deno). Callers that contain a listener's throw
// contain its rejection too.

/**
 * Hand a rejection of `result` (when it is a thenable) to `report`; nothing
 * else happens, and nothing waits for it.
 *
 * @param result What a listener returned.
 * @param report Called with the rejection's reason.
 */
export function containRejection(result: unknown, report: (error: unknown) => void): void {
  if (result === undefined || result === null || typeof result !== "object" && typeof result !== "function") return;
  try {
    const then = (result as { then?: unknown }).then;
    if (typeof then === "function") then.call(result, undefined, report);
  } catch (error) {
    report(error);
  }
}
