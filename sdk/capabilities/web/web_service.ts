/**
 * The web seams: `ctx.web` fetches a page as readable text, `ctx.webSearch`
 * searches the web.
 *
 * @module
 */

/** Options of {@linkcode WebService.fetch}. */
export interface WebFetchOptions {
  /** Stop waiting when this aborts. */
  readonly signal?: AbortSignal;
  /**
   * Asked for each redirect's target (its absolute URL) before it is
   * fetched; `false` (or a throw) refuses the hop with `WEB_REDIRECT_DENIED`.
   * `web_fetch` passes the permission rules' judgement of the target here.
   * A provider that follows redirects must ask it for every hop.
   */
  readonly permits?: (url: string) => boolean;
}

/** A fetched page, turned into text the model can read. */
export interface WebPage {
  /** The URL asked for. */
  readonly url: string;
  /** The URL the content came from, after redirects. */
  readonly finalUrl: string;
  /** The HTTP status of the final response. */
  readonly status: number;
  /** The media type of the content (`text/html`, …), without parameters. */
  readonly contentType: string;
  /** The page title, for HTML with one. */
  readonly title?: string;
  /** The content: markdown for HTML, the text itself for other text types, a note for binary content. */
  readonly text: string;
  /** Whether the body was cut at the provider's size cap. */
  readonly truncated: boolean;
  /** Bytes of the body read. */
  readonly bytes: number;
  /** How many redirects were followed. */
  readonly redirects: number;
}

/**
 * Fetches web pages: the service behind `ctx.web`.
 *
 * Contract: `fetch()` resolves with a {@linkcode WebPage} for any HTTP answer
 * (a 404 is a page with its status). It rejects with a `HarnessError`:
 * `WEB_INVALID_URL` (not http or https, or with a user name or password), `WEB_HOST_DENIED` (the host — or a
 * redirect's host — is not allowed), `WEB_REDIRECT_DENIED` (`options.permits` refused a redirect's target),
 * `WEB_REDIRECT_LIMIT`, `WEB_TIMEOUT`,
 * `WEB_ABORTED`, `WEB_FETCH_FAILED` (network).
 */
export interface WebService {
  /** Fetch `url` and turn its content into text. */
  fetch(url: string, options?: WebFetchOptions): Promise<WebPage>;
}

/** One search result. */
export interface WebSearchResult {
  /** The page title. */
  readonly title: string;
  /** The page URL. */
  readonly url: string;
  /** A short excerpt. */
  readonly snippet: string;
}

/** Options of {@linkcode WebSearchService.search}. */
export interface WebSearchOptions {
  /** The most results. @default {10} */
  readonly limit?: number;
  /** Stop waiting when this aborts. */
  readonly signal?: AbortSignal;
}

/**
 * Searches the web: the service behind `ctx.webSearch`. No provider ships
 * with the SDK (each needs a key); implement this interface over the search
 * API you use.
 *
 * Contract: `search()` resolves with at most `limit` results, best first, and
 * rejects with a `HarnessError` (`WEB_SEARCH_FAILED`, `WEB_ABORTED`) when the
 * search cannot be done.
 */
export interface WebSearchService {
  /** Search for `query`. */
  search(query: string, options?: WebSearchOptions): Promise<WebSearchResult[]>;
}
