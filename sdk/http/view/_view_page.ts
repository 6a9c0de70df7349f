// Internal: the HTML shell of the timeline pages. It carries no session data
// (it is served without the bearer token): the client script asks for the
// token and fetches everything with it.

import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { VIEW_STYLES } from "./_view_styles.ts";

/** Which page to render. */
export type ViewPageKind = "index" | "session" | "compare";

/** Render a page shell; `base` is the app's mount path (`""` at the root). */
export function viewPage(
  kind: ViewPageKind,
  base: string,
  sessionId?: string,
): HtmlEscapedString | Promise<HtmlEscapedString> {
  const title = kind === "session"
    ? `${sessionId} · dsh timeline`
    : kind === "compare"
    ? "Compare · dsh"
    : "Sessions · dsh";
  return html`
    <!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <link rel="icon" href="data:,">
        <title>${title}</title>
        <style>${raw(VIEW_STYLES)}</style>
      </head>
      <body>
        <div id="app" data-page="${kind}" data-base="${base}" data-session="${sessionId ?? ""}">
          <header
            class="top"><a class="brand" href="${base}/view">dsh&nbsp;timeline</a><span class="muted">loading…</span></header>
        </div>
        <noscript>The timeline needs JavaScript.</noscript>
        <script src="${base}/view/client.js" defer></script>
      </body>
    </html>
  `;
}
