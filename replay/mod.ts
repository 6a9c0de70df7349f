/**
 * `@dsh/harness/replay`. This subsystem is not built yet; it exports nothing so far.
 *
 * @module
 */

export {};
