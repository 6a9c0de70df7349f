/**
 * The SDK's identity on the wire.
 *
 * @module
 */

/** The package version; a test checks it against deno.json. */
export const VERSION = "0.1.0";

/** The `User-Agent` every adapter sends: public product facts only. */
export const USER_AGENT: string = `@dsh/harness/${VERSION}`;
