/**
 * `@dsh/harness/http`. The Hono microservice is not built yet; this entry exports nothing so far.
 *
 * @module
 */

export {};
