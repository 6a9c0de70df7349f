/**
 * `@dsh/harness/testing`. This subsystem is not built yet; it exports nothing so far.
 *
 * @module
 */

export {};
export * from "./scripted_adapter.ts";
