/**
 * The web seams (`ctx.web`, `ctx.webSearch`): service definitions, the HTTP
 * fetch provider, and the `web_fetch` and `web_search` tools.
 *
 * @module
 */

export type {
  WebFetchOptions,
  WebPage,
  WebSearchOptions,
  WebSearchResult,
  WebSearchService,
  WebService,
} from "./web_service.ts";
export { httpWeb, type HttpWebOptions } from "./http_web.ts";
export { webFetchTool, webSearchTool, type WebToolOptions } from "./web_tools.ts";
