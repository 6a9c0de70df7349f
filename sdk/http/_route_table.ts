// Internal: where the HTTP app's routes are — the methods of each route (for `405`) and the path the app is
// mounted under (moved out of `create_harness_app.ts`).

import type { Context } from "hono";

/** The methods of each route, for `405` answers (`Allow`). */
const ROUTES: readonly (readonly [RegExp, readonly string[]])[] = [
  [/^\/sessions\/?$/, ["GET", "POST"]],
  [/^\/sessions\/[^/]+\/?$/, ["GET", "DELETE"]],
  [/^\/sessions\/[^/]+\/(messages|cancel|wake|fork)\/?$/, ["POST"]],
  [/^\/sessions\/[^/]+\/(events|transcript|projections|approvals)\/?$/, ["GET"]],
  [/^\/sessions\/[^/]+\/approvals\/[^/]+\/?$/, ["POST"]],
];

/** The timeline's routes (`view/_view_routes.ts`), there unless the app is made with `view: false`. */
const VIEW_ROUTES: readonly (readonly [RegExp, readonly string[]])[] = [
  [/^\/view(\/compare|\/client\.js)?\/?$/, ["GET"]],
  [/^\/sessions\/[^/]+\/(view|log|surface)\/?$/, ["GET"]],
];

/** The methods of the route at `path` (relative to the mount path), `undefined` where there is none. */
export function allowedMethods(path: string, view: boolean): readonly string[] | undefined {
  const match = ([pattern]: readonly [RegExp, readonly string[]]) => pattern.test(path);
  return ROUTES.find(match)?.[1] ?? (view ? VIEW_ROUTES.find(match)?.[1] : undefined);
}

/** The path this app is mounted under (`""` at the root), from the route that matched: `/api` for `/api/sessions`. */
export function mountOf(c: Context, route: string): string {
  const matched = c.req.routePath;
  return matched.endsWith(route) ? matched.slice(0, matched.length - route.length) : "";
}
