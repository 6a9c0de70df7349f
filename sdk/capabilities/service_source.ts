/**
 * How a tool or a provider is given the service it builds on.
 *
 * @module
 */

/**
 * A service given directly, or a function that returns it at call time (for
 * example `() => ctx.service("fs")`, so that a provider swapped later is used).
 */
export type ServiceSource<T> = T | (() => T);
