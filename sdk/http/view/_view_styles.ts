// Internal: the stylesheet of the timeline pages (inlined in each page).

/** The CSS text. */
export const VIEW_STYLES: string = `
:root {
  --bg: #f6f7f9; --card: #fff; --fg: #1d2330; --muted: #687085; --line: #e2e5eb; --soft: #f0f2f6;
  --accent: #2f6fed; --user: #0f7b6c; --model: #5b4bd6; --tool: #b76e00; --err: #c92a2a; --ok: #2b8a3e;
  --wait: #c5cbd6; --stream: #5b8def; --tools: #f0a43a; --input: #7aa7f7; --cache: #b9d0fb; --output: #8e7cf0;
  --reason: #c6bcf7; --diverge: #fff1f0; --add: #e6f7ea; --del: #fdecec;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #12151b; --card: #1a1e26; --fg: #e4e7ee; --muted: #98a1b3; --line: #2b313d; --soft: #222834;
    --diverge: #3a1d1f; --add: #173323; --del: #3a1c1c; --wait: #465064;
  }
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--fg); }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; }
a { color: var(--accent); text-decoration: none; }
a:hover { text-decoration: underline; }
pre, code, .mono { font-family: var(--mono); font-size: 12.5px; }
pre { margin: 4px 0; padding: 8px 10px; background: var(--soft); border-radius: 6px; white-space: pre-wrap;
  word-break: break-word; max-height: 420px; overflow: auto; }
button, .btn { font: inherit; font-size: 12.5px; padding: 3px 10px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--card); color: var(--fg); cursor: pointer; }
button:hover, .btn:hover { border-color: var(--accent); text-decoration: none; }
button.primary { background: var(--accent); border-color: var(--accent); color: #fff; }
input, select { font: inherit; padding: 4px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--card);
  color: var(--fg); }
.muted { color: var(--muted); }
.small { font-size: 12px; }
.top { position: sticky; top: 0; z-index: 5; display: flex; gap: 14px; align-items: center; flex-wrap: wrap;
  padding: 10px 18px; background: var(--card); border-bottom: 1px solid var(--line); }
.brand { font-weight: 700; color: var(--fg); letter-spacing: .2px; }
.top .title { font-weight: 600; font-family: var(--mono); }
.top .spacer { flex: 1; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 11.5px; font-weight: 600;
  background: var(--soft); color: var(--muted); border: 1px solid var(--line); white-space: nowrap; }
.badge.live { background: #e7f5ff; color: #1864ab; border-color: #a5d8ff; }
.badge.running { background: #fff4e6; color: #d9480f; border-color: #ffd8a8; }
.badge.ok, .badge.completed { background: #ebfbee; color: var(--ok); border-color: #b2f2bb; }
.badge.err, .badge.error, .badge.aborted, .badge.blocked, .badge.interrupted { background: #fff5f5; color: var(--err);
  border-color: #ffc9c9; }
.badge.max-tokens { background: #fff9db; color: #946c00; border-color: #ffec99; }
.badge.user { color: var(--user); } .badge.model { color: var(--model); } .badge.tool { color: var(--tool); }
.layout { display: grid; grid-template-columns: 260px minmax(0, 1fr); gap: 18px; padding: 16px 18px; }
aside { position: sticky; top: 58px; align-self: start; max-height: calc(100vh - 70px); overflow: auto; }
aside h3 { font-size: 11.5px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted); margin: 14px 0 6px; }
.tree { list-style: none; margin: 0; padding-left: 0; }
.tree .tree { padding-left: 14px; border-left: 1px dashed var(--line); margin-left: 6px; }
.tree li { margin: 2px 0; }
.tree .node { font-family: var(--mono); font-size: 12.5px; }
.tree .node.current { font-weight: 700; color: var(--fg); background: var(--soft); padding: 0 4px; border-radius: 4px; }
.nav a { display: flex; justify-content: space-between; gap: 6px; padding: 2px 6px; border-radius: 4px; color: var(--fg);
  font-size: 13px; }
.nav a:hover { background: var(--soft); text-decoration: none; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px; }
.summary { display: flex; gap: 22px; flex-wrap: wrap; padding: 12px 16px; margin-bottom: 14px; }
.summary .k { font-size: 11.5px; color: var(--muted); text-transform: uppercase; letter-spacing: .5px; }
.summary .v { font-size: 16px; font-weight: 600; }
.turn { margin-bottom: 16px; content-visibility: auto; contain-intrinsic-size: auto 320px; }
.turn.inherited { opacity: .72; }
.turn-head { display: flex; gap: 10px; align-items: center; flex-wrap: wrap; padding: 10px 14px;
  border-bottom: 1px solid var(--line); }
.turn-head h2 { font-size: 15px; margin: 0; }
.turn-body { padding: 4px 14px 10px; }
.band { margin: 0 0 16px; padding: 8px 14px; border-radius: 10px; border: 1px dashed #b197fc; background: #f8f0fc; color: #5f3dc4; }
@media (prefers-color-scheme: dark) { .band { background: #2a2140; color: #d0bfff; } }
.step { border-top: 1px solid var(--line); padding: 10px 0 6px; }
.step:first-child { border-top: 0; }
.step-head { display: grid; grid-template-columns: 64px minmax(0, 1fr) auto; gap: 10px; align-items: center; }
.step-head .label { font-weight: 600; }
.bars { display: grid; gap: 3px; }
.bar { display: flex; height: 9px; border-radius: 3px; overflow: hidden; background: var(--soft); }
.bar > span { display: block; height: 100%; min-width: 0; }
.bar .wait { background: var(--wait); } .bar .stream { background: var(--stream); } .bar .tools { background: var(--tools); }
.bar .input { background: var(--input); } .bar .cache { background: var(--cache); } .bar .output { background: var(--output); }
.bar .reasoning { background: var(--reason); }
.figures { font-size: 12px; color: var(--muted); white-space: nowrap; text-align: right; }
.legend { display: flex; gap: 12px; flex-wrap: wrap; font-size: 11.5px; color: var(--muted); }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
.entries { margin: 6px 0 0 74px; display: grid; gap: 6px; }
.entry { display: grid; grid-template-columns: 92px minmax(0, 1fr); gap: 8px; align-items: start; }
.entry > .who { font-size: 11.5px; font-weight: 600; text-transform: uppercase; letter-spacing: .4px; padding-top: 2px; }
.who.user { color: var(--user); } .who.model { color: var(--model); } .who.tool { color: var(--tool); }
.who.ctx { color: #c2255c; } .who.sys { color: var(--muted); } .who.err { color: var(--err); }
.text { white-space: pre-wrap; word-break: break-word; }
.streaming::after { content: "▍"; color: var(--accent); animation: blink 1s steps(1) infinite; }
@keyframes blink { 50% { opacity: 0; } }
details > summary { cursor: pointer; list-style: none; }
details > summary::-webkit-details-marker { display: none; }
details > summary::before { content: "▸"; display: inline-block; width: 14px; color: var(--muted); transition: transform .1s; }
details[open] > summary::before { transform: rotate(90deg); }
.reasoning > summary { color: var(--muted); font-style: italic; }
.reasoning pre { font-family: inherit; font-size: 13px; color: var(--muted); }
details.tool { border: 1px solid var(--line); border-radius: 8px; padding: 5px 9px; background: var(--card); }
details.tool.failed { border-color: #ffc9c9; }
details.tool > summary { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.tool .name { font-family: var(--mono); font-weight: 600; }
.tool .args { font-family: var(--mono); font-size: 12px; color: var(--muted); overflow: hidden; text-overflow: ellipsis;
  white-space: nowrap; max-width: 520px; }
.tool .dur { margin-left: auto; font-size: 12px; color: var(--muted); }
.kv { display: grid; grid-template-columns: 92px minmax(0, 1fr); gap: 4px 8px; margin-top: 6px; font-size: 12.5px; }
.kv > .k { color: var(--muted); }
.diff { font-family: var(--mono); font-size: 12px; background: var(--soft); border-radius: 6px; padding: 6px 0; max-height: 360px;
  overflow: auto; }
.diff div { padding: 0 10px; white-space: pre-wrap; word-break: break-word; }
.diff .add { background: var(--add); } .diff .del { background: var(--del); }
.diff .add::before { content: "+ "; } .diff .del::before { content: "− "; } .diff .same::before { content: "  "; }
.panel-row { display: flex; gap: 8px; margin: 8px 0 0 74px; flex-wrap: wrap; }
.panel { margin: 8px 0 0 74px; }
.panel > summary { font-size: 12.5px; color: var(--accent); }
.split { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 12px; margin-top: 8px; }
.split h4 { margin: 0 0 6px; font-size: 12px; text-transform: uppercase; letter-spacing: .5px; color: var(--muted); }
.msg { border: 1px solid var(--line); border-radius: 6px; padding: 5px 8px; margin-bottom: 5px; font-size: 13px; }
.msg .meta { font-size: 11.5px; color: var(--muted); display: flex; gap: 8px; }
.msg.replace { border-color: #b197fc; background: #f8f0fc; }
@media (prefers-color-scheme: dark) { .msg.replace { background: #2a2140; } }
.logrow { display: grid; grid-template-columns: 52px 150px minmax(0, 1fr); gap: 8px; font-size: 12px; padding: 1px 4px;
  border-radius: 4px; }
.logrow .seq { color: var(--muted); font-family: var(--mono); text-align: right; }
.logrow .type { font-family: var(--mono); }
.logrow.shadowed { opacity: .5; text-decoration: line-through; text-decoration-color: #b197fc; }
.logrow.visible { background: var(--soft); }
.logrow.chunks { color: var(--muted); font-style: italic; }
.bracket { border-left: 3px solid #b197fc; padding-left: 6px; margin: 4px 0; }
.bracket > .note { font-size: 11.5px; color: #7048e8; }
.approvals { margin-bottom: 14px; padding: 10px 14px; border-color: #ffd8a8; background: #fff9f0; }
@media (prefers-color-scheme: dark) { .approvals { background: #33261a; } }
table.sessions { width: 100%; border-collapse: collapse; }
table.sessions th, table.sessions td { text-align: left; padding: 7px 10px; border-bottom: 1px solid var(--line); font-size: 13px; }
table.sessions th { font-size: 11.5px; color: var(--muted); text-transform: uppercase; letter-spacing: .5px; }
table.sessions td.id { font-family: var(--mono); }
.page { padding: 16px 18px; max-width: 1500px; }
.login { max-width: 420px; margin: 80px auto; padding: 22px; display: grid; gap: 10px; }
.cmp { display: grid; grid-template-columns: 110px minmax(0, 1fr) minmax(0, 1fr); gap: 0; }
.cmp > div { padding: 8px 10px; border-bottom: 1px solid var(--line); min-width: 0; }
.cmp .where { font-weight: 600; font-size: 12.5px; }
.cmp .head { font-weight: 700; background: var(--soft); position: sticky; top: 50px; z-index: 2; }
.cmp .turnrow { background: var(--soft); font-size: 12.5px; }
.cmp .diverge { background: var(--diverge); }
.cmp .first { box-shadow: inset 3px 0 0 var(--err); }
.cmp .side { display: grid; gap: 4px; font-size: 13px; }
.cmp .same-mark { color: var(--muted); font-size: 11.5px; }
.status { font-size: 12px; color: var(--muted); }
.status.bad { color: var(--err); font-weight: 600; }
.empty { padding: 30px; text-align: center; color: var(--muted); }
@media (max-width: 900px) { .layout { grid-template-columns: 1fr; } aside { position: static; max-height: none; }
  .split { grid-template-columns: 1fr; } .entries, .panel, .panel-row { margin-left: 0; } }
`;
