/**
 * An empty script: the cold-start benchmark's baseline, the time a runtime
 * needs to start and exit with nothing to do.
 *
 * @module
 */

export {};
