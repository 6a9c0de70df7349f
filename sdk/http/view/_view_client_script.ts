// Internal: the client script of the timeline pages, served at `/view/client.js`.
//
// Longer than the house limit on purpose: it is one self-contained browser
// script (no framework, no build step) holding the log fold, the diffs, the
// comparison and the rendering of three pages, which must travel as one file.
// It is plain JavaScript in a string so that the package needs no bundler and
// no file reads on any runtime. The first part (up to "if (typeof document")
// is pure: the unit tests evaluate it without a DOM. The script contains no
// backquote and no dollar-brace, so the raw template below holds it verbatim.

/** The script text. */
export const VIEW_CLIENT_SCRIPT: string = String.raw`(function () {
  "use strict";

  // ------------------------------------------------------------------ core: the log folded into turns and steps
  // Pure functions of the events; the unit tests evaluate this part without a DOM.

  function usage0() {
    return { input: 0, cache: 0, output: 0, reasoning: 0 };
  }
  function addUsage(total, u) {
    if (!u) return;
    total.input += u.inputTokens || 0;
    total.cache += u.cacheReadTokens || 0;
    total.output += u.outputTokens || 0;
    total.reasoning += u.reasoningTokens || 0;
  }
  function tokensOf(u) {
    return u.input + u.cache + u.output;
  }
  function contentText(content) {
    var out = [];
    for (var i = 0; i < (content || []).length; i++) {
      var b = content[i];
      if (b.type === "text") out.push(b.text);
      else if (b.type === "image") out.push("[image " + b.mediaType + "]");
      else if (b.type === "tool-result") out.push(contentText(b.content));
    }
    return out.join("\n");
  }
  function blocksOf(message, type) {
    var out = [];
    var content = (message && message.content) || [];
    for (var i = 0; i < content.length; i++) if (content[i].type === type) out.push(content[i]);
    return out;
  }
  function childSessionOf(meta) {
    if (!meta || typeof meta !== "object") return null;
    var keys = ["childSession", "childSessionId", "sessionId", "session"];
    for (var i = 0; i < keys.length; i++) if (typeof meta[keys[i]] === "string") return meta[keys[i]];
    return null;
  }

  /** An object with no prototype: safe to key by strings from the log ("__proto__", "constructor"…). */
  function dict() {
    return Object.create(null);
  }

  function own(object, key) {
    return Object.prototype.hasOwnProperty.call(object, key) ? object[key] : undefined;
  }

  /** An empty model; the header (from /log) tells a fork's seed end from the end-seed each resume writes. */
  function newModel(header) {
    return {
      header: header || null, events: [], blocks: [], turns: [], seedEnd: -1, lastHeader: null, turn: null, step: null, compaction: null,
      band: null, inbox: new Map(), dupes: 0, gaps: 0, totals: usage0(), inherited: null, chunkStep: null, version: 0,
      nextId: 0, dirty: new Set(),
    };
  }

  /**
   * Count one usage in the step, turn and session totals, as the usageTotals projection does
   * (sdk/projections/usage_totals.ts): every usage chunk counts, failed attempts' too; an
   * assistant/message's usage counts only when its step's stream carried none; a compaction's
   * summary calls count from its compaction/end. A fork's session totals are its own: at its seed's end,
   * what the seed counted moves to m.inherited (the projection's inherited) and the totals start again.
   */
  function countUsage(m, t, s, u) {
    if (s) s.hasUsage = true, addUsage(s.usage, u);
    if (t) addUsage(t.usage, u);
    addUsage(m.totals, u);
  }

  /** Mark a block changed: its version moves on and it joins the blocks to re-render. */
  function touch(m, t) {
    if (t) t.v++, m.dirty.add(t);
    m.version++;
  }

  function bandOf(m) {
    if (m.turn) return null;
    if (!m.band) {
      m.band = { kind: "band", id: "b" + m.nextId++, items: [], v: 0 };
      m.blocks.push(m.band);
    }
    return m.band;
  }

  /** Place a note (compaction, retry, seed end, todo…) where it happened: in the open step, turn, or a band. */
  function note(m, item) {
    if (m.step) m.step.notes.push(item), touch(m, m.turn);
    else if (m.turn) m.turn.items.push(item), touch(m, m.turn);
    else {
      var band = bandOf(m);
      band.items.push(item);
      touch(m, band);
    }
  }

  function toolOf(step, callId) {
    var tool = step.toolById.get(callId);
    if (!tool) {
      tool = {
        callId: callId, name: "", args: "", callSeq: -1, callTime: 0, resultSeq: -1, resultTime: 0, result: "",
        isError: false, error: null, meta: null, approval: null, child: null, done: false,
      };
      step.toolById.set(callId, tool);
      step.tools.push(tool);
    }
    return tool;
  }

  function inputKind(m, message) {
    var source = message.source || {};
    if (message.role === "system") return "context";
    if (source.kind === "plugin") return "context";
    if (source.kind === "tool") return "tool context";
    var target = m.inbox.get(message.id);
    if (target === "next-step") return "steer";
    return "user";
  }

  /** Fold one committed event into the model; false (and counted) when it repeats a seq already seen. */
  function pushEvent(m, e) {
    if (e.seq < m.events.length) {
      m.dupes++;
      return false;
    }
    if (e.seq > m.events.length) {
      m.gaps += e.seq - m.events.length;
      m.events.length = e.seq;
    }
    m.events.push(e);
    var d = e.data || {};
    var t = m.turn;
    var s = m.step;
    switch (e.type) {
      case "turn/start":
        t = {
          kind: "turn", id: "t" + d.turn + "-" + e.seq, turn: d.turn, startSeq: e.seq, startTime: e.time, endSeq: -1,
          endTime: 0, lastSeq: e.seq, lastTime: e.time, reason: null, steps: [], items: [], usage: usage0(),
          inherited: false, v: 0,
        };
        m.turns.push(t);
        m.blocks.push(t);
        m.turn = t;
        m.chunkStep = null;
        m.step = null;
        m.band = null;
        break;
      case "turn/end":
        if (t) {
          t.endSeq = e.seq;
          t.endTime = e.time;
          t.reason = d.reason;
        }
        m.turn = null;
        m.step = null;
        break;
      case "step/start":
        if (!t) break;
        s = {
          kind: "step", turn: d.turn, step: d.step, startSeq: e.seq, startTime: e.time, endSeq: -1, endTime: 0,
          inputs: [], headers: [], context: null, attempts: [], retries: [], messages: [], tools: [], toolById: new Map(),
          notes: [], usage: usage0(), hasUsage: false,
        };
        t.steps.push(s);
        t.items.push(s);
        m.step = s;
        break;
      case "step/end":
        if (s) {
          s.endSeq = e.seq;
          s.endTime = e.time;
        }
        m.step = null;
        break;
      case "agent/inbox/spliced":
        for (var i = 0; i < (d.inserted || []).length; i++) {
          var entry = d.inserted[i];
          if (entry && entry.message) m.inbox.set(entry.message.id, d.target);
        }
        break;
      case "system/message":
      case "user/message": {
        var op = e.surfaceOp;
        if (m.compaction && op && typeof op === "object") {
          m.compaction.summarySeq = e.seq;
          touch(m, m.turn || m.band);
          break;
        }
        var input = { seq: e.seq, time: e.time, kind: inputKind(m, d), text: contentText(d.content), source: d.source };
        if (s) s.inputs.push(input);
        else note(m, { kind: "input", seq: e.seq, input: input });
        break;
      }
      case "request/header": {
        var h = { seq: e.seq, reason: d.reason, header: d.header, prev: m.lastHeader };
        m.lastHeader = d.header;
        if (s) s.headers.push(h);
        else note(m, { kind: "header", seq: e.seq, header: h });
        break;
      }
      case "request/context":
        if (s) s.context = d;
        break;
      case "assistant/chunk": {
        if (d.chunk && d.chunk.type === "usage") {
          countUsage(m, t, s, d.chunk.usage);
          m.chunkStep = d.turn + "." + d.step;
        }
        if (!s) break;
        var a = s.attempts[s.attempts.length - 1];
        if (!a || a.finish) {
          var before = m.events[e.seq - 1];
          a = {
            firstSeq: e.seq, lastSeq: e.seq, firstTime: e.time, lastTime: e.time,
            requestTime: before ? before.time : e.time, chunks: 0, finish: null, text: "", reasoning: "", usage: null,
          };
          s.attempts.push(a);
        }
        a.chunks++;
        a.lastSeq = e.seq;
        a.lastTime = e.time;
        var c = d.chunk || {};
        if (c.type === "text-delta") a.text += c.text;
        else if (c.type === "reasoning-delta") a.reasoning += c.text;
        else if (c.type === "usage") a.usage = c.usage;
        else if (c.type === "finish") a.finish = c.reason || { kind: "stop" };
        break;
      }
      case "llm/retry":
        if (s) s.retries.push({ seq: e.seq, attempt: d.attempt, delayMs: d.delayMs, failure: d.failure });
        else note(m, { kind: "retry", seq: e.seq, retry: d });
        break;
      case "assistant/message": {
        if (d.usage && m.chunkStep !== d.turn + "." + d.step) countUsage(m, t, s, d.usage);
        if (!s) break;
        s.messages.push({ seq: e.seq, time: e.time, message: d.message, usage: d.usage, interrupted: !!d.interrupted });
        var calls = blocksOf(d.message, "tool-call");
        for (var j = 0; j < calls.length; j++) {
          var tc = toolOf(s, calls[j].id);
          tc.name = calls[j].name;
          tc.args = calls[j].arguments;
        }
        break;
      }
      case "tool/call": {
        if (!s) break;
        var call = toolOf(s, d.callId);
        call.name = d.name;
        call.args = d.arguments;
        call.callSeq = e.seq;
        call.callTime = e.time;
        break;
      }
      case "tool/result": {
        if (!s) break;
        var block = blocksOf(d.message, "tool-result")[0];
        var id = block ? block.toolCallId : (d.message.source && d.message.source.callId) || "?";
        var tool = toolOf(s, id);
        tool.resultSeq = e.seq;
        tool.resultTime = e.time;
        tool.done = true;
        tool.result = block ? contentText(block.content) : contentText(d.message.content);
        tool.error = d.error || null;
        tool.isError = !!d.error || !!(block && block.isError);
        tool.meta = d.meta || null;
        tool.child = childSessionOf(d.meta);
        var approval = /denied: approval ([a-z-]+)/.exec(tool.result);
        if (approval) tool.approval = approval[1];
        else if (tool.error && tool.error.code === "DENIED") tool.approval = "denied";
        break;
      }
      case "subagent/spawned": {
        // The delegating tool call's child session, known as soon as the child starts.
        var owner = m.step;
        if (!owner || !d.callId) break;
        var delegated = toolOf(owner, d.callId);
        delegated.child = d.session;
        delegated.subagent = { agent: d.agent, mode: d.mode };
        break;
      }
      case "session/end-seed": {
        // Every resume writes one (where that process's own writes start); only the one right after a
        // fork's seed (the header's seedLength events copied from parentSession) ends inherited turns, or,
        // when that seed itself ends with one (a fork of a fork, or of a resumed session, that had not run
        // since: the session then writes none of its own), that copied last one.
        var hd = m.header || {};
        var atSeedEnd = e.seq === hd.seedLength || e.seq === hd.seedLength - 1;
        if (hd.parentSession && typeof hd.seedLength === "number" && atSeedEnd && m.seedEnd < 0) {
          m.seedEnd = e.seq;
          m.inherited = m.totals;
          m.totals = usage0();
          for (var k = 0; k < m.turns.length; k++) m.turns[k].inherited = true, touch(m, m.turns[k]);
          note(m, { kind: "seed", seq: e.seq });
        } else note(m, { kind: "resume", seq: e.seq });
        break;
      }
      case "compaction/start":
        m.compaction = {
          kind: "compaction", seq: e.seq, reason: d.reason, summary: "", start: -1, end: -1, outcome: null, error: null,
          summarySeq: -1, endSeq: -1,
        };
        note(m, m.compaction);
        break;
      case "compaction/summary":
        if (m.compaction) {
          m.compaction.summary = d.summary;
          m.compaction.start = d.start;
          m.compaction.end = d.end;
        }
        break;
      case "compaction/end":
        // The summary calls' usage: in the open turn's and the session's totals (usageTotals counts it so).
        if (d.usage) countUsage(m, t, null, d.usage);
        if (m.compaction) {
          m.compaction.outcome = d.outcome;
          m.compaction.error = d.error || null;
          m.compaction.endSeq = e.seq;
        }
        m.compaction = null;
        break;
      case "todo/write":
        note(m, { kind: "todo", seq: e.seq, todos: d.todos || [] });
        break;
      default:
        break;
    }
    if (t) {
      t.lastSeq = e.seq;
      t.lastTime = e.time;
    }
    touch(m, m.turn || t || m.band);
    return true;
  }

  function buildModel(events, header) {
    var m = newModel(header);
    for (var i = 0; i < events.length; i++) pushEvent(m, events[i]);
    return m;
  }

  /** The seq the step's request was sent at: the derived history is the log before it. */
  function requestSeqOf(m, step) {
    var a = step.attempts[step.attempts.length - 1];
    if (a) return a.firstSeq;
    if (step.messages.length) return step.messages[0].seq;
    return step.endSeq >= 0 ? step.endSeq : m.events.length;
  }

  function stepTiming(m, step) {
    var endTime = step.endSeq >= 0 ? step.endTime : (m.events[m.events.length - 1] || { time: step.startTime }).time;
    var total = Math.max(0, endTime - step.startTime);
    var chunks = 0;
    var stream = 0;
    var first = step.attempts[0];
    for (var i = 0; i < step.attempts.length; i++) {
      chunks += step.attempts[i].chunks;
      stream += step.attempts[i].lastTime - step.attempts[i].firstTime;
    }
    var ttfc = first ? Math.max(0, first.firstTime - first.requestTime) : null;
    var toolStart = Infinity;
    var toolEnd = -Infinity;
    for (var j = 0; j < step.tools.length; j++) {
      var tool = step.tools[j];
      if (tool.callSeq >= 0) toolStart = Math.min(toolStart, tool.callTime);
      if (tool.resultSeq >= 0) toolEnd = Math.max(toolEnd, tool.resultTime);
    }
    var toolMs = toolEnd >= toolStart ? toolEnd - toolStart : 0;
    return {
      total: total, ttfc: ttfc, stream: stream, chunks: chunks, tools: toolMs,
      chunksPerSec: stream > 0 ? chunks / (stream / 1000) : null,
    };
  }

  function finishOf(step) {
    var a = step.attempts[step.attempts.length - 1];
    return a && a.finish ? a.finish.kind : null;
  }

  // ------------------------------------------------------------------ diffs

  /** A line diff (LCS after trimming the common prefix and suffix). */
  function lineDiff(a, b) {
    var x = a === "" ? [] : String(a).split("\n");
    var y = b === "" ? [] : String(b).split("\n");
    var pre = 0;
    while (pre < x.length && pre < y.length && x[pre] === y[pre]) pre++;
    var suf = 0;
    while (suf < x.length - pre && suf < y.length - pre && x[x.length - 1 - suf] === y[y.length - 1 - suf]) suf++;
    var xs = x.slice(pre, x.length - suf);
    var ys = y.slice(pre, y.length - suf);
    var out = [];
    var i;
    for (i = 0; i < pre; i++) out.push({ op: "same", text: x[i] });
    if (xs.length * ys.length > 250000) {
      for (i = 0; i < xs.length; i++) out.push({ op: "del", text: xs[i] });
      for (i = 0; i < ys.length; i++) out.push({ op: "add", text: ys[i] });
    } else {
      var n = xs.length;
      var mm = ys.length;
      var dp = [];
      for (i = 0; i <= n; i++) dp.push(new Array(mm + 1).fill(0));
      for (i = n - 1; i >= 0; i--) {
        for (var j = mm - 1; j >= 0; j--) {
          dp[i][j] = xs[i] === ys[j] ? dp[i + 1][j + 1] + 1 : Math.max(dp[i + 1][j], dp[i][j + 1]);
        }
      }
      var p = 0;
      var q = 0;
      while (p < n && q < mm) {
        if (xs[p] === ys[q]) out.push({ op: "same", text: xs[p] }), p++, q++;
        else if (dp[p + 1][q] >= dp[p][q + 1]) out.push({ op: "del", text: xs[p++] });
        else out.push({ op: "add", text: ys[q++] });
      }
      while (p < n) out.push({ op: "del", text: xs[p++] });
      while (q < mm) out.push({ op: "add", text: ys[q++] });
    }
    for (i = x.length - suf; i < x.length; i++) out.push({ op: "same", text: x[i] });
    return out;
  }

  function stableJson(value) {
    if (Array.isArray(value)) return "[" + value.map(stableJson).join(",") + "]";
    if (value && typeof value === "object") {
      return "{" + Object.keys(value).sort().map(function (k) {
        return JSON.stringify(k) + ":" + stableJson(value[k]);
      }).join(",") + "}";
    }
    return JSON.stringify(value);
  }

  /** What changed between two request headers: config fields, system prompt lines, tools. */
  function headerDiff(prev, next) {
    var out = { config: [], system: null, toolsAdded: [], toolsRemoved: [], toolsChanged: [] };
    var pc = (prev && prev.config) || {};
    var nc = (next && next.config) || {};
    var keys = dict();
    Object.keys(pc).concat(Object.keys(nc)).forEach(function (k) {
      keys[k] = true;
    });
    Object.keys(keys).sort().forEach(function (k) {
      var from = own(pc, k);
      var to = own(nc, k);
      if (stableJson(from) !== stableJson(to)) out.config.push({ key: k, from: from, to: to });
    });
    var ps = (prev && prev.system) || "";
    var ns = (next && next.system) || "";
    if (ps !== ns) out.system = lineDiff(ps, ns);
    var pt = dict();
    var nt = dict();
    ((prev && prev.tools) || []).forEach(function (t) {
      pt[t.name] = t;
    });
    ((next && next.tools) || []).forEach(function (t) {
      nt[t.name] = t;
    });
    Object.keys(nt).forEach(function (name) {
      if (!pt[name]) out.toolsAdded.push(name);
      else if (stableJson(pt[name]) !== stableJson(nt[name])) {
        out.toolsChanged.push({
          name: name,
          diff: lineDiff(JSON.stringify(pt[name], null, 2), JSON.stringify(nt[name], null, 2)),
        });
      }
    });
    Object.keys(pt).forEach(function (name) {
      if (!nt[name]) out.toolsRemoved.push(name);
    });
    return out;
  }

  // ------------------------------------------------------------------ comparing two sessions

  function normArgs(raw) {
    try {
      return stableJson(JSON.parse(raw === "" ? "{}" : raw));
    } catch (_e) {
      return String(raw);
    }
  }

  /** What must be equal for two steps to count as the same: ids, times and usage are left out. */
  function stepSignature(step) {
    var text = [];
    var reasoning = [];
    for (var i = 0; i < step.messages.length; i++) {
      blocksOf(step.messages[i].message, "text").forEach(function (b) {
        text.push(b.text);
      });
      blocksOf(step.messages[i].message, "reasoning").forEach(function (b) {
        reasoning.push(b.text);
      });
    }
    return {
      input: step.inputs.map(function (x) {
        return x.kind + ": " + x.text;
      }),
      reasoning: reasoning,
      text: text,
      "tool calls": step.tools.map(function (t) {
        return t.name + " " + normArgs(t.args);
      }),
      "tool results": step.tools.map(function (t) {
        return (t.error ? t.error.code + " " : "") + t.result;
      }),
      finish: [finishOf(step) || ""],
    };
  }

  function reasonText(reason) {
    if (!reason) return "open";
    if (reason.kind === "aborted") return "aborted (" + reason.reason + ")";
    if (reason.kind === "error") return "error (" + (reason.error && reason.error.code) + ")";
    return reason.kind;
  }

  /**
   * Align two models by turn and step. Rows: a turn head, its steps, its end; "differs" names what
   * differs; "first" is the index of the first differing row, or -1.
   */
  function alignSessions(a, b) {
    var rows = [];
    var first = -1;
    var byTurnA = dict();
    var byTurnB = dict();
    a.turns.forEach(function (t) {
      byTurnA[t.turn] = t;
    });
    b.turns.forEach(function (t) {
      byTurnB[t.turn] = t;
    });
    var maxTurn = 0;
    a.turns.concat(b.turns).forEach(function (t) {
      maxTurn = Math.max(maxTurn, t.turn);
    });
    function add(row) {
      if (row.differs.length && first < 0) first = rows.length;
      rows.push(row);
    }
    for (var n = 1; n <= maxTurn; n++) {
      var ta = byTurnA[n] || null;
      var tb = byTurnB[n] || null;
      if (!ta && !tb) continue;
      add({ kind: "turn", turn: n, a: ta, b: tb, differs: ta && tb ? [] : ["missing turn"] });
      if (!ta || !tb) continue;
      var steps = Math.max(ta.steps.length, tb.steps.length);
      for (var k = 0; k < steps; k++) {
        var sa = ta.steps[k] || null;
        var sb = tb.steps[k] || null;
        var differs = [];
        if (!sa || !sb) differs.push("missing step");
        else {
          var ga = stepSignature(sa);
          var gb = stepSignature(sb);
          Object.keys(ga).forEach(function (field) {
            if (JSON.stringify(ga[field]) !== JSON.stringify(gb[field])) differs.push(field);
          });
        }
        add({ kind: "step", turn: n, step: k + 1, a: sa, b: sb, differs: differs });
      }
      var ra = reasonText(ta.reason);
      var rb = reasonText(tb.reason);
      add({ kind: "end", turn: n, a: ta, b: tb, differs: ra === rb ? [] : ["turn end"] });
    }
    return { rows: rows, first: first };
  }

  // ------------------------------------------------------------------ the fork tree

  function byCreation(x, y) {
    return (x.createdAt || 0) - (y.createdAt || 0);
  }

  /**
   * The sessions as a forest by parentSession: children by parent id, and the roots (no listed parent).
   * Headers can form a cycle (a forked into b, a deleted, b forked into a new a): a session not reached from
   * a root is in or below one, and the first session of that cycle becomes a root, so that none is hidden.
   */
  function forkForest(sessions) {
    var byId = dict();
    var children = dict();
    sessions.forEach(function (s) {
      byId[s.id] = s;
    });
    sessions.forEach(function (s) {
      var p = s.parentSession && byId[s.parentSession] ? s.parentSession : "";
      (children[p] = children[p] || []).push(s);
    });
    for (var key in children) children[key].sort(byCreation);
    var roots = (children[""] || []).slice();
    var reached = dict();
    function reach(root) {
      var stack = [root];
      while (stack.length) {
        var s = stack.pop();
        if (reached[s.id]) continue;
        reached[s.id] = true;
        (children[s.id] || []).forEach(function (c) {
          stack.push(c);
        });
      }
    }
    roots.forEach(reach);
    sessions.forEach(function (s) {
      if (reached[s.id]) return;
      var seen = dict();
      var x = s;
      while (x && !seen[x.id]) seen[x.id] = true, x = byId[x.parentSession];
      x = x || s;
      roots.push(x);
      reach(x);
    });
    roots.sort(byCreation);
    return { byId: byId, children: children, roots: roots };
  }

  /** The sessions in tree order, each once, with its depth below its root. */
  function forkRows(forest) {
    var rows = [];
    var done = dict();
    (function walk(list, depth) {
      list.forEach(function (s) {
        if (done[s.id]) return;
        done[s.id] = true;
        rows.push({ session: s, depth: depth });
        walk(forest.children[s.id] || [], depth + 1);
      });
    })(forest.roots, 0);
    return rows;
  }

  var core = {
    forkForest: forkForest, forkRows: forkRows, newModel: newModel, pushEvent: pushEvent, buildModel: buildModel, stepTiming: stepTiming, lineDiff: lineDiff,
    headerDiff: headerDiff, alignSessions: alignSessions, stepSignature: stepSignature, requestSeqOf: requestSeqOf,
    reasonText: reasonText, tokensOf: tokensOf,
  };
  if (typeof document === "undefined") return core;

  // ------------------------------------------------------------------ DOM helpers

  var app = document.getElementById("app");
  var BASE = app.getAttribute("data-base") || "";
  var PAGE = app.getAttribute("data-page");
  var SID = app.getAttribute("data-session");
  var TOKEN_KEY = "dsh-view-token";
  var metrics = { start: performance.now() };
  var view = { core: core, metrics: metrics, model: null, follow: null, ready: false };
  window.dshView = view;

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      for (var k in attrs) {
        var v = attrs[k];
        if (v === undefined || v === null || v === false) continue;
        if (k === "class") el.className = v;
        else if (k === "text") el.textContent = v;
        else if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), v);
        else if (k === "style") el.setAttribute("style", v);
        else el.setAttribute(k, v === true ? "" : String(v));
      }
    }
    for (var i = 2; i < arguments.length; i++) append(el, arguments[i]);
    return el;
  }
  function append(el, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) child.forEach(function (c) {
      append(el, c);
    });
    else if (typeof child === "string" || typeof child === "number") el.appendChild(document.createTextNode(String(child)));
    else el.appendChild(child);
  }
  function clear(el) {
    while (el.firstChild) el.removeChild(el.firstChild);
  }
  function fmtN(n) {
    if (n === null || n === undefined) return "–";
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M";
    if (n >= 1e4) return (n / 1e3).toFixed(1) + "k";
    return String(Math.round(n));
  }
  function fmtMs(ms) {
    if (ms === null || ms === undefined) return "–";
    if (ms >= 60000) return (ms / 60000).toFixed(1) + " min";
    if (ms >= 1000) return (ms / 1000).toFixed(ms >= 10000 ? 0 : 1) + " s";
    return Math.round(ms) + " ms";
  }
  function fmtTime(t) {
    try {
      return new Date(t).toISOString().replace("T", " ").slice(0, 19);
    } catch (_e) {
      return "";
    }
  }
  function pretty(raw) {
    if (raw === "" || raw === undefined) return "{}";
    try {
      return JSON.stringify(JSON.parse(raw), null, 2);
    } catch (_e) {
      return String(raw);
    }
  }
  function oneLine(text, max) {
    var s = String(text || "").replace(/\s+/g, " ").trim();
    return s.length > max ? s.slice(0, max - 1) + "…" : s;
  }
  function viewUrl(id) {
    return BASE + "/sessions/" + encodeURIComponent(id) + "/view";
  }
  function reasonClass(reason) {
    return reason ? reason.kind : "running";
  }

  // Which <details> are open survives re-rendering (live updates replace whole turns).
  var openKeys = new Set();
  document.addEventListener("toggle", function (ev) {
    var el = ev.target;
    if (!el || !el.getAttribute) return;
    var key = el.getAttribute("data-key");
    if (!key) return;
    if (el.open) openKeys.add(key);
    else openKeys.delete(key);
    if (el.open && el._onOpen) el._onOpen(el);
  }, true);
  function details(key, cls, summary, body, onOpen) {
    var el = h("details", { class: cls, "data-key": key }, h("summary", null, summary));
    if (typeof body === "function") el._onOpen = function (d) {
      if (!d._filled) d._filled = true, append(d, body());
    };
    else append(el, body);
    if (onOpen) el._onOpen = onOpen;
    if (openKeys.has(key)) {
      el.open = true;
      if (el._onOpen) setTimeout(function () {
        el._onOpen(el);
      }, 0);
    }
    return el;
  }

  // ------------------------------------------------------------------ auth and requests

  // Why the #token= of the address was not taken (shown on the token form), or "".
  var fragmentProblem = "";
  (function tokenFromFragment() {
    var match = /(?:^#|&)token=([^&]+)/.exec(location.hash);
    if (!match) return;
    try {
      sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
    } catch (_e) {
      // A malformed percent-escape (URIError): no token from the address; the form asks for one.
      fragmentProblem = "The #token= in the address is not valid percent-encoding, so it was not used; enter the token.";
    }
    history.replaceState(null, "", location.pathname + location.search);
  })();
  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }
  function authHeaders(extra) {
    var headers = extra || {};
    if (token()) headers.authorization = "Bearer " + token();
    return headers;
  }
  function AuthNeeded(message) {
    this.message = message;
  }
  function api(path, init) {
    init = init || {};
    init.headers = authHeaders(init.headers);
    return fetch(BASE + path, init).then(function (r) {
      if (r.status === 401) {
        return r.json().catch(function () {
          return {};
        }).then(function (p) {
          throw new AuthNeeded(p.detail || p.title || "A bearer token is needed");
        });
      }
      return r;
    });
  }
  function getJson(path) {
    return api(path).then(function (r) {
      if (r.ok) return r.json();
      return r.json().catch(function () {
        return {};
      }).then(function (p) {
        throw new Error((p.detail || p.title || "HTTP " + r.status) + (p.code ? " (" + p.code + ")" : ""));
      });
    });
  }

  function topBar(children) {
    return h("header", { class: "top" }, h("a", { class: "brand", href: BASE + "/view" }, "dsh timeline"), children);
  }
  function showLogin(message) {
    clear(app);
    var input = h("input", { type: "password", id: "token", placeholder: "Bearer token", autocomplete: "off" });
    var form = h(
      "form",
      { class: "card login", id: "login", onsubmit: function (ev) {
        ev.preventDefault();
        sessionStorage.setItem(TOKEN_KEY, input.value.trim());
        start();
      } },
      h("h2", { style: "margin:0" }, "Token needed"),
      h("div", { class: "muted" }, "This harness serves its sessions with bearer authentication. The token is kept in this tab only and sent with the page's own requests."),
      message ? h("div", { class: "status bad" }, message) : null,
      input,
      h("button", { class: "primary", type: "submit" }, "Open"),
    );
    append(app, [topBar(null), form]);
    input.focus();
  }
  function showError(error) {
    if (error instanceof AuthNeeded) return showLogin(token() ? error.message : fragmentProblem);
    clear(app);
    append(app, [topBar(null), h("div", { class: "card empty", id: "error" }, String(error && error.message || error))]);
  }

  // ------------------------------------------------------------------ pieces of a step

  /**
   * A bar of parts [class, value], drawn against the scale in the CSS variable --scale-<scale> (set on
   * #blocks by applyScale()): a new maximum while following moves one variable, and no block is redrawn.
   * A part longer than the scale (the live step, until the scale catches up) fills the bar.
   */
  function bar(parts, scale, title) {
    var el = h("div", { class: "bar", title: title });
    for (var i = 0; i < parts.length; i++) {
      var v = parts[i][1];
      if (v > 0) {
        el.appendChild(h("span", { class: parts[i][0], style: "width:clamp(0.6%, calc(100% * " + v.toFixed(3) + " / var(--scale-" + scale + ")), 100%)" }));
      }
    }
    return el;
  }
  function usageText(u) {
    return "in " + fmtN(u.input) + (u.cache ? " · cached " + fmtN(u.cache) : "") + " · out " + fmtN(u.output) +
      (u.reasoning ? " (reasoning " + fmtN(u.reasoning) + ")" : "");
  }
  function usageBar(u, scale) {
    return bar([["input", u.input], ["cache", u.cache], ["output", u.output - u.reasoning], ["reasoning", u.reasoning]], scale,
      "tokens: " + usageText(u));
  }
  function diffView(lines) {
    return h("div", { class: "diff" }, lines.map(function (l) {
      return h("div", { class: l.op }, l.text === "" ? " " : l.text);
    }));
  }

  function headerEntry(hd) {
    var header = hd.header || {};
    var config = header.config || {};
    var tools = header.tools || [];
    var route = (config.provider || "?") + "/" + (config.model || "?");
    if (hd.reason !== "change" || !hd.prev) {
      var body = h("div", { class: "kv" },
        h("div", { class: "k" }, "model"), h("div", { class: "mono" }, route),
        h("div", { class: "k" }, "config"), h("pre", null, JSON.stringify(config, null, 2)),
        h("div", { class: "k" }, "tools"), h("div", { class: "mono" }, tools.map(function (t) {
          return t.name;
        }).join(", ") || "none"),
        h("div", { class: "k" }, "system"), h("pre", null, header.system || "(none)"));
      return entry("sys", "request", details("hdr-" + hd.seq, "header", h("span", null,
        "Request header (" + hd.reason + "): ", h("span", { class: "mono" }, route), " · " + tools.length + " tools · system " +
          fmtN((header.system || "").length) + " chars"), body));
    }
    var diff = headerDiff(hd.prev, header);
    var parts = [];
    diff.config.forEach(function (c) {
      parts.push(c.key + ": " + JSON.stringify(c.from) + " → " + JSON.stringify(c.to));
    });
    if (diff.system) {
      var plus = diff.system.filter(function (l) {
        return l.op === "add";
      }).length;
      var minus = diff.system.filter(function (l) {
        return l.op === "del";
      }).length;
      parts.push("system +" + plus + " −" + minus);
    }
    if (diff.toolsAdded.length) parts.push("tools added: " + diff.toolsAdded.join(", "));
    if (diff.toolsRemoved.length) parts.push("tools removed: " + diff.toolsRemoved.join(", "));
    if (diff.toolsChanged.length) parts.push("tools changed: " + diff.toolsChanged.map(function (t) {
      return t.name;
    }).join(", "));
    var inner = h("div", { class: "hdr-diff" });
    if (diff.config.length) {
      append(inner, h("div", { class: "small muted" }, "config"));
      append(inner, diffView(diff.config.map(function (c) {
        return { op: "del", text: c.key + ": " + JSON.stringify(c.from) };
      }).concat(diff.config.map(function (c) {
        return { op: "add", text: c.key + ": " + JSON.stringify(c.to) };
      }))));
    }
    if (diff.system) append(inner, [h("div", { class: "small muted" }, "system prompt"), diffView(diff.system)]);
    if (diff.toolsAdded.length || diff.toolsRemoved.length) {
      append(inner, [h("div", { class: "small muted" }, "tools"), diffView(diff.toolsRemoved.map(function (n) {
        return { op: "del", text: n };
      }).concat(diff.toolsAdded.map(function (n) {
        return { op: "add", text: n };
      })))]);
    }
    diff.toolsChanged.forEach(function (t) {
      append(inner, [h("div", { class: "small muted" }, "tool " + t.name), diffView(t.diff)]);
    });
    return entry("sys", "request", details("hdr-" + hd.seq, "header header-change", h("span", null, "Request header changed: ",
      h("b", null, parts.join("; ") || "no visible change")), inner));
  }

  function entry(cls, who, content, attrs) {
    var el = h("div", attrs || { class: "entry" }, h("div", { class: "who " + cls }, who), content);
    if (attrs) el.className = "entry " + (attrs.class || "");
    return el;
  }

  function toolEntry(m, tool, step) {
    var failed = tool.isError;
    var status = !tool.done
      ? h("span", { class: "badge running" }, "running")
      : tool.approval
      ? h("span", { class: "badge err" }, "approval: " + tool.approval)
      : tool.error
      ? h("span", { class: "badge err" }, tool.error.code)
      : failed
      ? h("span", { class: "badge err" }, "error")
      : h("span", { class: "badge ok" }, "ok");
    var dur = tool.callSeq >= 0 && tool.resultSeq >= 0 ? fmtMs(tool.resultTime - tool.callTime) : tool.callSeq < 0 && tool.done ? "not run" : "";
    var body = h("div", { class: "kv" },
      h("div", { class: "k" }, "arguments"), h("pre", { class: "tool-args" }, pretty(tool.args)),
      h("div", { class: "k" }, tool.isError ? "error" : "result"), h("pre", { class: "tool-result" }, tool.done ? (tool.result || "(no output)") : "…"),
      tool.error ? [h("div", { class: "k" }, "code"), h("div", { class: "mono" }, tool.error.name + " · " + tool.error.code)] : null,
      tool.approval ? [h("div", { class: "k" }, "approval"), h("div", null, tool.approval)] : null,
      tool.child ? [h("div", { class: "k" }, "subagent"), h("a", { href: viewUrl(tool.child), class: "child-link" }, "child session " + tool.child +
        (tool.subagent ? " (" + tool.subagent.agent + ", " + tool.subagent.mode + ")" : ""))] : null,
      tool.meta && !tool.child ? [h("div", { class: "k" }, "meta"), h("pre", null, JSON.stringify(tool.meta, null, 2))] : null,
      h("div", { class: "k" }, "log"), h("div", { class: "mono small" },
        (tool.callSeq >= 0 ? "call #" + tool.callSeq : "no tool/call") + (tool.resultSeq >= 0 ? " → result #" + tool.resultSeq : "")));
    var summary = [
      h("span", { class: "name" }, tool.name || "?"),
      h("span", { class: "args" }, oneLine(tool.args, 90)),
      status,
      tool.child ? h("a", { href: viewUrl(tool.child), class: "badge child-link" }, "↳ " + tool.child) : null,
      h("span", { class: "dur" }, dur),
    ];
    return entry("tool", "tool", details("tool-" + step.turn + "-" + step.step + "-" + tool.callId, "tool" + (failed ? " failed" : ""), summary, body),
      { class: "", "data-call-id": tool.callId });
  }

  function messageEntries(m, step) {
    var out = [];
    step.messages.forEach(function (msg) {
      var content = (msg.message && msg.message.content) || [];
      content.forEach(function (b, i) {
        if (b.type === "reasoning" && b.text.trim() !== "") {
          out.push(entry("model", "reasoning", details("rsn-" + msg.seq + "-" + i, "reasoning",
            "Reasoning · " + fmtN(b.text.length) + " chars", h("pre", null, b.text))));
        } else if (b.type === "text" && b.text !== "") {
          out.push(entry("model", msg.interrupted ? "model · cut" : "model", h("div", { class: "text assistant-text" }, b.text,
            msg.interrupted ? h("span", { class: "badge interrupted", style: "margin-left:6px" }, "interrupted") : null)));
        }
      });
    });
    if (!step.messages.length) {
      var a = step.attempts[step.attempts.length - 1];
      if (a && !a.finish) {
        if (a.reasoning) out.push(entry("model", "reasoning", h("div", { class: "text muted" + (a.text ? "" : " streaming") }, a.reasoning)));
        if (a.text || !a.reasoning) out.push(entry("model", "model", h("div", { class: "text assistant-text streaming" }, a.text)));
      }
    }
    return out;
  }

  function surfacePanel(m, step) {
    var at = requestSeqOf(m, step);
    var key = "surf-" + step.turn + "-" + step.step;
    var holder = h("div", { class: "surface-body" }, h("div", { class: "muted small" }, "loading…"));
    return details(key, "panel surface", "What the model saw — derived history at #" + at + ", beside the full log", holder,
      function (el) {
        if (el._loaded) return;
        el._loaded = true;
        getJson("/sessions/" + encodeURIComponent(SID) + "/surface?at=" + at).then(function (v) {
          clear(holder);
          append(holder, renderSurface(v));
        }).catch(function (e) {
          clear(holder);
          append(holder, h("div", { class: "status bad" }, String(e.message || e)));
        });
      });
  }

  function renderSurface(v) {
    var left = h("div", { class: "surface-messages", "data-at": v.at }, h("h4", null, "Derived history · " + v.messages.length + " messages"));
    v.messages.forEach(function (sm) {
      var msg = sm.message;
      var parts = [];
      (msg.content || []).forEach(function (b) {
        if (b.type === "text") parts.push(b.text);
        else if (b.type === "reasoning") parts.push("[reasoning] " + b.text);
        else if (b.type === "tool-call") parts.push("→ " + b.name + "(" + b.arguments + ")");
        else if (b.type === "tool-result") parts.push("← " + contentText(b.content));
        else if (b.type === "image") parts.push("[image]");
      });
      append(left, h("div", { class: "msg" + (sm.replaces ? " replace" : ""), "data-seq": sm.seq, "data-id": msg.id, "data-role": msg.role },
        h("div", { class: "meta" }, h("span", { class: "badge " + (msg.role === "assistant" ? "model" : msg.role === "user" ? "user" : "") }, msg.role),
          h("span", null, "#" + sm.seq), sm.replaces ? h("span", null, "replaces #" + sm.replaces.start + "–#" + sm.replaces.end) : null),
        h("div", { class: "text msg-text" }, parts.join("\n"))));
    });
    var right = h("div", { class: "surface-log" }, h("h4", null, "Full log · message events before #" + v.at));
    v.replacements.forEach(function (r) {
      append(right, h("div", { class: "bracket" }, h("div", { class: "note" },
        "#" + r.start + "–#" + r.end + " replaced by #" + r.seq + " (" + r.shadowedSeqs.length + " nodes hidden from the model)")));
    });
    v.log.forEach(function (row) {
      append(right, h("div", { class: "logrow " + (row.shadowedBy !== undefined ? "shadowed" : row.visible ? "visible" : ""), "data-seq": row.seq },
        h("span", { class: "seq" }, "#" + row.seq), h("span", { class: "type" }, row.type + (row.role ? " · " + row.role : "")),
        h("span", null, (row.shadowedBy !== undefined ? "[compacted into #" + row.shadowedBy + "] " : "") + row.text)));
    });
    return h("div", { class: "split" }, left, right);
  }

  function logPanel(m, from, to, key) {
    return details(key, "panel log", "Log #" + from + "–#" + to + " (" + (to - from + 1) + " events)", function () {
      var box = h("div", { class: "log-rows" });
      var run = null;
      function flush() {
        if (!run) return;
        append(box, h("div", { class: "logrow chunks" }, h("span", { class: "seq" }, "#" + run.from),
          h("span", { class: "type" }, "assistant/chunk ×" + run.n), h("span", null, "#" + run.from + "–#" + run.to + " " + Object.keys(run.kinds).join(", "))));
        run = null;
      }
      for (var seq = from; seq <= to && seq < m.events.length; seq++) {
        var e = m.events[seq];
        if (!e) continue;
        if (e.type === "assistant/chunk") {
          if (!run) run = { from: seq, to: seq, n: 0, kinds: dict() };
          run.to = seq;
          run.n++;
          run.kinds[e.data.chunk.type] = true;
          continue;
        }
        flush();
        append(box, h("div", { class: "logrow" }, h("span", { class: "seq" }, "#" + seq), h("span", { class: "type" }, e.type),
          h("span", { class: "mono small" }, oneLine(JSON.stringify(e.data), 160))));
      }
      flush();
      return box;
    });
  }

  function noteEntry(m, item) {
    if (item.kind === "compaction") {
      var c = item;
      return entry("ctx", "compaction", h("div", { class: "compaction" },
        h("div", null, "Compaction (" + c.reason + ")" + (c.start >= 0 ? ": events #" + c.start + "–#" + c.end + " summarised" : "") +
          (c.summarySeq >= 0 ? " into #" + c.summarySeq : "") + " · ", h("span", { class: "badge " + (c.outcome === "completed" ? "ok" : c.outcome ? "err" : "running") }, c.outcome || "running"),
          c.error ? " " + c.error : null),
        c.summary ? details("cmp-" + c.seq, "reasoning", "Summary", h("pre", null, c.summary)) : null));
    }
    if (item.kind === "retry") return entry("err", "retry", retryText(item.retry));
    if (item.kind === "input") return inputEntry(item.input);
    if (item.kind === "header") return headerEntry(item.header);
    if (item.kind === "seed") {
      var parent = m.header && m.header.parentSession;
      return entry("sys", "fork", h("div", null, "Forked here: events #0–#" + (item.seq - 1) + " come from ",
        parent ? h("a", { href: viewUrl(parent) }, parent) : "the seed", "; this session continues from #" + (item.seq + 1) + "."));
    }
    if (item.kind === "resume") {
      return entry("sys", "resumed", h("div", { class: "resumed" }, "Resumed here: events from #" + (item.seq + 1) + " on were written after the session was resumed."));
    }
    if (item.kind === "todo") {
      return entry("sys", "todos", h("div", null, item.todos.map(function (t) {
        return h("div", null, (t.status === "completed" ? "☑ " : t.status === "in_progress" ? "◐ " : "☐ ") + t.content);
      })));
    }
    return null;
  }
  function retryText(r) {
    return h("div", null, "Attempt " + r.attempt + " failed (" + (r.failure && r.failure.code) + ": " + (r.failure && r.failure.message) +
      "); retried after " + fmtMs(r.delayMs));
  }
  function inputEntry(input) {
    var cls = input.kind === "user" ? "user" : input.kind === "steer" ? "user" : "ctx";
    return entry(cls, input.kind === "user" ? "user" : input.kind, h("div", { class: "text input-text" }, input.text), {
      class: "input", "data-kind": input.kind, "data-seq": input.seq,
    });
  }

  function renderStep(m, t, step) {
    var timing = stepTiming(m, step);
    var fin = finishOf(step);
    var el = h("div", { class: "step", id: "t" + step.turn + "s" + step.step, "data-turn": step.turn, "data-step": step.step });
    var figures = h("div", { class: "figures" },
      fin ? h("span", { class: "badge " + (fin === "stop" || fin === "tool-calls" ? "" : "err") }, fin) : h("span", { class: "badge running" }, "streaming"),
      " ", fmtMs(timing.total), h("br"),
      "ttfc " + fmtMs(timing.ttfc) + " · " + (timing.chunksPerSec === null ? timing.chunks + " chunks" : fmtN(timing.chunksPerSec) + " chunks/s") +
        (step.tools.length ? " · tools " + fmtMs(timing.tools) : ""), h("br"),
      step.hasUsage ? usageText(step.usage) : "no usage");
    var bars = h("div", { class: "bars" },
      bar([["wait", timing.ttfc || 0], ["stream", timing.stream], ["tools", timing.tools]], "ms",
        "time to first chunk " + fmtMs(timing.ttfc) + ", streaming " + fmtMs(timing.stream) + ", tools " + fmtMs(timing.tools)),
      usageBar(step.usage, "tokens"));
    append(el, h("div", { class: "step-head" }, h("div", { class: "label" }, "Step " + step.step), bars, figures));
    var entries = h("div", { class: "entries" });
    step.inputs.forEach(function (i) {
      append(entries, inputEntry(i));
    });
    step.headers.forEach(function (hd) {
      append(entries, headerEntry(hd));
    });
    step.notes.forEach(function (n) {
      append(entries, noteEntry(m, n));
    });
    step.retries.forEach(function (r) {
      append(entries, entry("err", "retry", retryText(r)));
    });
    append(entries, messageEntries(m, step));
    step.tools.forEach(function (tool) {
      append(entries, toolEntry(m, tool, step));
    });
    append(el, entries);
    var end = step.endSeq >= 0 ? step.endSeq : m.events.length - 1;
    append(el, surfacePanel(m, step));
    append(el, logPanel(m, step.startSeq, end, "log-" + step.turn + "-" + step.step));
    return el;
  }

  function renderTurn(m, t) {
    var el = h("section", { class: "card turn" + (t.inherited ? " inherited" : ""), id: "turn-" + t.turn, "data-turn": t.turn });
    var dur = (t.endSeq >= 0 ? t.endTime : t.lastTime) - t.startTime;
    append(el, h("div", { class: "turn-head" },
      h("h2", null, "Turn " + t.turn),
      h("span", { class: "badge turn-reason " + reasonClass(t.reason) }, t.reason ? reasonText(t.reason) : "running"),
      t.inherited ? h("span", { class: "badge" }, "inherited from parent") : null,
      h("span", { class: "muted small" }, t.steps.length + (t.steps.length === 1 ? " step" : " steps") + " · " + fmtMs(dur) + " · " + usageText(t.usage)),
      h("span", { style: "flex:1" }),
      h("div", { style: "width:160px" }, usageBar(t.usage, "turn-tokens"))));
    var body = h("div", { class: "turn-body" });
    t.items.forEach(function (item) {
      if (item.kind === "step") append(body, renderStep(m, t, item));
      else append(body, h("div", { class: "entries", style: "margin-left:0" }, noteEntry(m, item)));
    });
    if (t.endSeq >= 0) append(body, logPanel(m, t.startSeq, t.endSeq, "tlog-" + t.turn));
    append(el, body);
    return el;
  }

  function renderBand(m, band) {
    var el = h("div", { class: "band", id: band.id });
    band.items.forEach(function (item) {
      append(el, noteEntry(m, item));
    });
    return el;
  }

  /**
   * Raise the scale to one turn's figures; true when it grew. While following, a step's time counts once
   * the step has ended (its bar fills until then): a growing step would move the scale on every frame.
   */
  function growScale(m, s, t, endedOnly) {
    var before = s.ms + s.tokens + s.turnTokens;
    s.turnTokens = Math.max(s.turnTokens, tokensOf(t.usage));
    t.steps.forEach(function (step) {
      if (endedOnly && step.endSeq < 0) return;
      var timing = stepTiming(m, step);
      s.ms = Math.max(s.ms, (timing.ttfc || 0) + timing.stream + timing.tools);
      s.tokens = Math.max(s.tokens, tokensOf(step.usage));
    });
    return s.ms + s.tokens + s.turnTokens !== before;
  }
  /** The bars' scale: the largest step time, step tokens and turn tokens. */
  function scaleOf(m) {
    var s = { ms: 1, tokens: 1, turnTokens: 1 };
    m.turns.forEach(function (t) {
      growScale(m, s, t, false);
    });
    return s;
  }
  // Moving a scale restyles every bar of the page: while a live step grows the time scale on every frame,
  // the scale catches up at most every SCALE_EVERY_MS.
  var SCALE_EVERY_MS = 500;
  var scaleTimer = null;
  var scaleAt = -Infinity;
  function scheduleScale() {
    if (scaleTimer !== null) return;
    scaleTimer = setTimeout(function () {
      scaleTimer = null;
      scaleAt = performance.now();
      applyScale();
    }, Math.max(0, scaleAt + SCALE_EVERY_MS - performance.now()));
  }
  function applyScale() {
    var style = state.el.blocks.style;
    style.setProperty("--scale-ms", String(state.scale.ms));
    style.setProperty("--scale-tokens", String(state.scale.tokens));
    style.setProperty("--scale-turn-tokens", String(state.scale.turnTokens));
  }

  // ------------------------------------------------------------------ the session page

  var state = null;

  /** The session page; carry (after event: reset) keeps following, and counting reconnects, across the reload. */
  function sessionPage(carry) {
    var t0 = performance.now();
    var sessionsPromise = getJson("/sessions").catch(function () {
      return { sessions: [] };
    });
    return getJson("/sessions/" + encodeURIComponent(SID) + "/log").then(function (log) {
      var t1 = performance.now();
      var m = newModel(log.header);
      for (var i = 0; i < log.events.length; i++) pushEvent(m, log.events[i]);
      m.dirty = new Set(); // the first render draws every block
      var t2 = performance.now();
      metrics.fetchMs = t1 - t0;
      metrics.buildMs = t2 - t1;
      metrics.events = log.events.length;
      view.model = m;
      state = {
        m: m, log: log, rendered: dict(), scale: scaleOf(m), status: log.status, live: log.live || !!carry, pending: [],
        complete: false, nav: dict(), incarnation: log.incarnation,
      };
      renderSessionShell();
      applyScale();
      renderBlocks(true);
      sessionsPromise.then(renderTree);
      if (log.live || carry) follow(carry);
    });
  }

  function renderSessionShell() {
    var m = state.m;
    var parent = m.header && m.header.parentSession;
    clear(app);
    var status = h("span", { class: "status", id: "follow-status" }, state.live ? "" : "stored · not live");
    var liveBadge = h("span", { class: "badge " + (state.live ? (state.status === "running" ? "running" : "live") : ""), id: "status-badge" },
      state.live ? state.status : "stored");
    state.el = { status: status, badge: liveBadge };
    append(app, topBar([
      h("span", { class: "title" }, SID),
      liveBadge,
      parent ? h("span", { class: "muted small" }, "fork of ", h("a", { href: viewUrl(parent) }, parent)) : null,
      h("span", { class: "spacer" }),
      status,
      parent ? h("a", { class: "btn", href: BASE + "/view/compare?a=" + encodeURIComponent(parent) + "&b=" + encodeURIComponent(SID) }, "Compare with parent") : null,
      h("button", { id: "transcript-btn", onclick: showTranscript }, "Transcript"),
    ]));
    var aside = h("aside", null, h("h3", null, "Fork / child tree"), h("div", { id: "tree" }, h("div", { class: "muted small" }, "…")),
      h("h3", null, "Turns"), h("div", { class: "nav", id: "turn-nav" }));
    var main = h("main", { id: "timeline" });
    state.el.summary = h("div", { class: "card summary", id: "summary" });
    state.el.approvals = h("div", { id: "approvals" });
    state.el.blocks = h("div", { id: "blocks" });
    state.el.transcript = h("div", { id: "transcript" });
    append(main, [state.el.summary, state.el.approvals, state.el.transcript, state.el.blocks]);
    append(app, h("div", { class: "layout" }, aside, main));
    renderSummary();
  }

  function renderSummary() {
    var m = state.m;
    var el = state.el.summary;
    clear(el);
    function kv(k, v) {
      return h("div", null, h("div", { class: "k" }, k), h("div", { class: "v" }, v));
    }
    var model = m.lastHeader && m.lastHeader.config ? m.lastHeader.config.provider + "/" + m.lastHeader.config.model : "–";
    append(el, [
      kv("turns", String(m.turns.length)), kv("events", fmtN(m.events.length)), kv("model", model),
      kv("input", fmtN(m.totals.input)), kv("cached", fmtN(m.totals.cache)), kv("output", fmtN(m.totals.output)),
      kv("reasoning", fmtN(m.totals.reasoning)),
      m.inherited ? kv("inherited", fmtN(tokensOf(m.inherited)) + " tokens") : null,
      h("div", { class: "legend", style: "align-self:end" },
        h("span", null, h("i", { style: "background:var(--wait)" }), "time to first chunk"),
        h("span", null, h("i", { style: "background:var(--stream)" }), "streaming"),
        h("span", null, h("i", { style: "background:var(--tools)" }), "tools"),
        h("span", null, h("i", { style: "background:var(--input)" }), "input"),
        h("span", null, h("i", { style: "background:var(--cache)" }), "cached"),
        h("span", null, h("i", { style: "background:var(--output)" }), "output"),
        h("span", null, h("i", { style: "background:var(--reason)" }), "reasoning")),
    ]);
  }

  function renderBlockEl(m, block) {
    return block.kind === "turn" ? renderTurn(m, block) : renderBand(m, block);
  }

  /** Draw one block if it is new or changed since drawn; true when drawn. */
  function renderBlock(m, block) {
    var seen = state.rendered[block.id];
    if (seen && seen.v === block.v) return false;
    var container = state.el.blocks;
    var el = renderBlockEl(m, block);
    if (seen) container.replaceChild(el, seen.el);
    else {
      var empty = document.getElementById("no-turns");
      if (empty) empty.remove();
      container.appendChild(el);
    }
    state.rendered[block.id] = { v: block.v, el: el };
    return true;
  }

  /**
   * Render new and changed blocks; the first call renders a first screen, then the rest in slices. Once
   * every block is drawn, a live update redraws only the blocks it changed ("dirty", in the order they
   * were touched: new blocks in log order), and their entries of the turn list.
   */
  function renderBlocks(first, dirty) {
    var m = state.m;
    var blocks = m.blocks;
    var container = state.el.blocks;
    if (!blocks.length && !container.firstChild) {
      append(container, h("div", { class: "card empty", id: "no-turns" }, "No turns yet."));
    }
    if (!first && dirty && state.complete) {
      dirty.forEach(function (block) {
        if (renderBlock(m, block) && block.kind === "turn") renderNavTurn(block);
      });
      return;
    }
    var budget = first ? 12 : Infinity;
    var i = 0;
    function slice() {
      var n = 0;
      for (; i < blocks.length && n < budget; i++) if (renderBlock(m, blocks[i])) n++;
      if (i < blocks.length) setTimeout(slice, 0);
      else {
        state.complete = true;
        renderNav();
      }
    }
    slice();
    if (first) {
      requestAnimationFrame(function () {
        metrics.firstScreenMs = performance.now();
        view.ready = true;
        app.setAttribute("data-ready", "1");
        var hash = location.hash.slice(1);
        if (hash) {
          var target = document.getElementById(hash);
          if (target) target.scrollIntoView();
        }
      });
    }
  }

  function renderNav() {
    var nav = document.getElementById("turn-nav");
    if (!nav) return;
    clear(nav);
    state.nav = dict();
    state.m.turns.forEach(renderNavTurn);
  }
  /** Draw (or redraw) one turn's entry of the turn list. */
  function renderNavTurn(t) {
    var nav = document.getElementById("turn-nav");
    if (!nav) return;
    var el = h("a", { href: "#turn-" + t.turn }, h("span", null, "Turn " + t.turn),
      h("span", { class: "badge " + reasonClass(t.reason) }, t.reason ? t.reason.kind : "running"));
    var seen = state.nav[t.id];
    if (seen) nav.replaceChild(el, seen);
    else nav.appendChild(el);
    state.nav[t.id] = el;
  }

  function renderTree(list) {
    var el = document.getElementById("tree");
    if (!el) return;
    clear(el);
    append(el, sessionTree(list.sessions || [], SID));
  }

  /** The fork/child tree around "current": its root and every descendant. */
  function sessionTree(sessions, current) {
    var forest = forkForest(sessions);
    var drawn = dict();
    function node(s) {
      drawn[s.id] = true;
      var kids = (forest.children[s.id] || []).filter(function (k) {
        return !drawn[k.id];
      });
      kids.forEach(function (k) {
        drawn[k.id] = true;
      });
      return h("li", null, h("a", { class: "node" + (s.id === current ? " current" : ""), href: viewUrl(s.id) }, s.id),
        " ", h("span", { class: "muted small" }, s.live ? s.status : "stored"),
        kids.length ? h("ul", { class: "tree" }, kids.map(node)) : null);
    }
    var roots = forest.roots;
    if (current) {
      var root = forest.byId[current];
      if (!root) return h("div", { class: "muted small" }, "not listed");
      var isRoot = dict();
      roots.forEach(function (r) {
        isRoot[r.id] = true;
      });
      var seen = dict();
      while (!isRoot[root.id] && !seen[root.id] && forest.byId[root.parentSession]) {
        seen[root.id] = true;
        root = forest.byId[root.parentSession];
      }
      roots = [root];
    }
    return h("ul", { class: "tree" }, roots.map(node));
  }

  function showTranscript() {
    var box = state.el.transcript;
    if (box.firstChild) return clear(box);
    api("/sessions/" + encodeURIComponent(SID) + "/transcript?format=markdown").then(function (r) {
      return r.text();
    }).then(function (text) {
      clear(box);
      append(box, h("div", { class: "card", style: "padding:10px 14px;margin-bottom:14px" },
        h("div", { style: "display:flex;justify-content:space-between" }, h("b", null, "Transcript (markdown)"),
          h("button", { onclick: function () {
            clear(box);
          } }, "Close")), h("pre", { style: "max-height:520px" }, text)));
    });
  }

  // ------------------------------------------------------------------ live follow over fetch (EventSource cannot send headers)

  function setStatus() {
    var f = view.follow;
    var m = state.m;
    var el = state.el.status;
    if (!f) return;
    if (f.problem) {
      el.textContent = "not following · " + f.problem;
      el.className = "status bad";
      el.setAttribute("data-phase", f.phase);
      state.el.badge.textContent = state.status;
      state.el.badge.className = "badge err";
      return;
    }
    el.textContent = f.phase + " · " + m.events.length + " events · " + m.gaps + " gaps · " + m.dupes + " duplicates · " +
      f.reconnects + (f.reconnects === 1 ? " reconnect" : " reconnects");
    el.className = "status" + (m.gaps || m.dupes ? " bad" : "");
    el.setAttribute("data-phase", f.phase);
    state.el.badge.textContent = state.status;
    state.el.badge.className = "badge " + (state.status === "running" ? "running" : "live");
  }

  var renderQueued = false;
  function scheduleRender() {
    if (renderQueued) return;
    renderQueued = true;
    requestAnimationFrame(function () {
      renderQueued = false;
      var m = state.m;
      var dirty = m.dirty;
      m.dirty = new Set();
      // Figures only grow as events arrive: the changed turns alone can raise the scale.
      var grew = false;
      dirty.forEach(function (block) {
        if (block.kind === "turn" && growScale(m, state.scale, block, true)) grew = true;
      });
      if (grew) scheduleScale();
      renderBlocks(false, dirty);
      renderSummary();
      setStatus();
    });
  }

  /** Parse an SSE byte stream; calls onMessage({ event, id, data }). */
  function readSse(body, onMessage) {
    var reader = body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    var msg = { event: "message", id: undefined, data: [] };
    function line(l) {
      if (l === "") {
        if (msg.data.length) onMessage({ event: msg.event, id: msg.id, data: msg.data.join("\n") });
        msg = { event: "message", id: undefined, data: [] };
        return;
      }
      if (l.charAt(0) === ":") return;
      var colon = l.indexOf(":");
      var field = colon < 0 ? l : l.slice(0, colon);
      var value = colon < 0 ? "" : l.slice(colon + 1);
      if (value.charAt(0) === " ") value = value.slice(1);
      if (field === "event") msg.event = value;
      else if (field === "data") msg.data.push(value);
      else if (field === "id") msg.id = value;
    }
    function pump() {
      return reader.read().then(function (r) {
        if (r.done) return;
        buffer += decoder.decode(r.value, { stream: true });
        var parts = buffer.split(/\r\n|\r|\n/);
        buffer = parts.pop();
        parts.forEach(line);
        return pump();
      });
    }
    return { done: pump(), cancel: function () {
      return reader.cancel().catch(function () {});
    } };
  }

  function follow(carry) {
    var m0 = state.m;
    var f = {
      phase: "connecting", reconnects: carry ? carry.reconnects : 0, controller: null, stopped: false, ended: false,
      backoff: 250, problem: "",
      // The id of the last event the page holds, <incarnation>:<seq>: a stream of another life of the log (the
      // session deleted and created again) then starts over with event: reset instead of going on from the seq.
      lastId: m0.events.length > 0 && state.incarnation ? state.incarnation + ":" + (m0.events.length - 1) : "",
    };
    view.follow = f;
    view.drop = function () {
      if (f.controller) f.controller.abort();
    };
    /** The log the page shows is not the one the server has now: load the page again from the new one. */
    function startOver() {
      f.stopped = true;
      if (f.controller) f.controller.abort();
      sessionPage({ reconnects: f.reconnects + 1 }).catch(showError);
    }
    function connect() {
      if (f.stopped) return;
      var m = state.m;
      var controller = new AbortController();
      f.controller = controller;
      var headers = { accept: "text/event-stream" };
      if (f.lastId) headers["last-event-id"] = f.lastId;
      f.phase = f.reconnects ? "reconnecting" : "connecting";
      setStatus();
      api("/sessions/" + encodeURIComponent(SID) + "/events?deltas=false", { headers: headers, signal: controller.signal })
        .then(function (r) {
          if (r.status >= 400 && r.status < 500 && r.status !== 408 && r.status !== 429) {
            // Asking again will not help (the session was deleted: 404 SESSION_NOT_FOUND): stop, and say why.
            return r.json().catch(function () {
              return {};
            }).then(function (p) {
              f.stopped = true;
              f.phase = "stopped";
              f.problem = (p.detail || p.title || "HTTP " + r.status) + (p.code ? " (" + p.code + ")" : "");
              state.status = r.status === 404 ? "not found" : "refused";
              setStatus();
            });
          }
          if (!r.ok || !r.body) throw new Error("HTTP " + r.status);
          f.phase = "following";
          f.backoff = 250;
          setStatus();
          var sse = readSse(r.body, function (msg) {
            if (f.stopped) return;
            var data = msg.data ? JSON.parse(msg.data) : null;
            if (msg.event === "session") {
              if (pushEvent(m, data)) scheduleRender();
              else setStatus();
              if (msg.id) f.lastId = msg.id;
            } else if (msg.event === "status") {
              state.status = data.status;
              setStatus();
            } else if (msg.event === "reset" || (msg.event === "ready" && data.incarnation && state.incarnation &&
              data.incarnation !== state.incarnation)) {
              // Another life of the log (or the page is ahead of it): what the page shows is not part of it.
              startOver();
            } else if (msg.event === "ready") {
              state.status = data.status;
              // A new connection: the approvals still pending come right after ready; a card from before is stale.
              renderApprovals([]);
            } else if (msg.event === "approvals") {
              renderApprovals(data.pending || []);
            } else if (msg.event === "end") {
              f.ended = true;
            }
          });
          controller.signal.addEventListener("abort", sse.cancel);
          return sse.done;
        })
        .catch(function (e) {
          if (e instanceof AuthNeeded) {
            f.stopped = true;
            showLogin(e.message);
          }
        })
        .then(function () {
          if (f.stopped) return;
          if (f.ended) {
            f.phase = "ended";
            state.status = "stopped";
            setStatus();
            return;
          }
          f.reconnects++;
          f.phase = "reconnecting";
          setStatus();
          setTimeout(connect, f.backoff);
          f.backoff = Math.min(f.backoff * 2, 5000);
        });
    }
    connect();
  }

  function renderApprovals(pending) {
    var el = state.el.approvals;
    clear(el);
    if (!pending.length) return;
    append(el, h("div", { class: "card approvals" }, h("b", null, "Waiting for approval"), pending.map(function (p) {
      function decide(decision) {
        return function () {
          // A subagent's question is answered at its own session's route.
          api("/sessions/" + encodeURIComponent(p.sessionId || SID) + "/approvals/" + encodeURIComponent(p.callId), {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ decision: decision }),
          });
        };
      }
      var who = p.sessionId && p.sessionId !== SID ? p.toolName + " (" + p.sessionId + ")" : p.toolName;
      return h("div", { class: "entry", style: "margin-top:6px" }, h("div", { class: "who tool" }, who),
        h("div", null, h("code", null, oneLine(JSON.stringify(p.args), 140)), p.reason ? h("div", { class: "muted small" }, p.reason) : null,
          h("div", { style: "margin-top:4px;display:flex;gap:6px" },
            h("button", { class: "primary", onclick: decide("allow") }, "Allow once"), h("button", { onclick: decide("reject") }, "Reject"))));
    })));
  }

  // ------------------------------------------------------------------ the index page

  function indexPage() {
    return getJson("/sessions").then(function (list) {
      var sessions = list.sessions || [];
      clear(app);
      append(app, topBar([h("span", { class: "title" }, "Sessions"), h("span", { class: "spacer" }),
        h("span", { class: "muted small" }, sessions.length + " sessions")]));
      var page = h("div", { class: "page" });
      if (!sessions.length) append(page, h("div", { class: "card empty" }, "No sessions yet."));
      else {
        var rows = forkRows(forkForest(sessions)).map(function (row) {
          var s = row.session;
          var depth = row.depth;
          return h("tr", { "data-session": s.id },
            h("td", { class: "id" }, h("span", { style: "padding-left:" + depth * 18 + "px" }, depth ? "↳ " : ""),
              h("a", { href: viewUrl(s.id) }, s.id)),
            h("td", null, h("span", { class: "badge " + (s.live ? (s.status === "running" ? "running" : "live") : "") }, s.live ? s.status : "stored")),
            h("td", null, s.turns !== undefined ? String(s.turns) : "–"),
            h("td", null, s.seq !== undefined ? fmtN(s.seq) : "–"),
            h("td", { class: "mono small" }, s.model ? (s.provider ? s.provider + "/" : "") + s.model : "–"),
            h("td", { class: "small muted" }, s.createdAt ? fmtTime(s.createdAt) : "–"),
            h("td", null, s.parentSession ? h("a", { class: "btn", href: BASE + "/view/compare?a=" + encodeURIComponent(s.parentSession) + "&b=" + encodeURIComponent(s.id) }, "compare with parent") : null));
        });
        append(page, h("div", { class: "card" }, h("table", { class: "sessions" },
          h("thead", null, h("tr", null, ["session", "status", "turns", "events", "model", "created", ""].map(function (c) {
            return h("th", null, c);
          }))), h("tbody", null, rows))));
        append(page, compareForm(sessions, "", ""));
      }
      append(app, page);
      app.setAttribute("data-ready", "1");
      view.ready = true;
    });
  }

  function compareForm(sessions, a, b) {
    function select(name, value) {
      return h("select", { name: name }, sessions.map(function (s) {
        return h("option", { value: s.id, selected: s.id === value }, s.id);
      }));
    }
    return h("form", { class: "card", action: BASE + "/view/compare", method: "get", style: "margin-top:14px;padding:12px 14px;display:flex;gap:10px;align-items:center;flex-wrap:wrap" },
      h("b", null, "Compare"), select("a", a), h("span", { class: "muted" }, "with"), select("b", b || (sessions[1] && sessions[1].id)),
      h("button", { class: "primary", type: "submit" }, "Compare"));
  }

  // ------------------------------------------------------------------ the compare page

  function compactStep(step) {
    if (!step) return h("div", { class: "muted" }, "—");
    var out = h("div", { class: "side" });
    step.inputs.forEach(function (i) {
      append(out, h("div", null, h("span", { class: "who user small" }, i.kind + " "), oneLine(i.text, 300)));
    });
    step.messages.forEach(function (msg) {
      (msg.message.content || []).forEach(function (b) {
        if (b.type === "text" && b.text) append(out, h("div", { class: "text" }, b.text));
        if (b.type === "reasoning" && b.text) append(out, h("div", { class: "muted small" }, "reasoning: " + oneLine(b.text, 200)));
      });
    });
    step.tools.forEach(function (t) {
      append(out, h("div", { class: "mono small" }, "→ " + t.name + "(" + oneLine(t.args, 160) + ")"));
      append(out, h("div", { class: "mono small" + (t.isError ? " status bad" : "") }, "← " + (t.error ? t.error.code + ": " : "") + oneLine(t.result, 200)));
    });
    var fin = finishOf(step);
    if (fin) append(out, h("div", { class: "muted small" }, "finish: " + fin));
    return out;
  }

  function comparePage() {
    var params = new URLSearchParams(location.search);
    var a = params.get("a");
    var b = params.get("b");
    var listPromise = getJson("/sessions").catch(function () {
      return { sessions: [] };
    });
    if (!a || !b) {
      return listPromise.then(function (list) {
        clear(app);
        append(app, [topBar(h("span", { class: "title" }, "Compare")), h("div", { class: "page" }, compareForm(list.sessions || [], a, b))]);
        app.setAttribute("data-ready", "1");
      });
    }
    return Promise.all([
      getJson("/sessions/" + encodeURIComponent(a) + "/log"),
      getJson("/sessions/" + encodeURIComponent(b) + "/log"),
    ]).then(function (logs) {
      var ma = buildModel(logs[0].events, logs[0].header);
      var mb = buildModel(logs[1].events, logs[1].header);
      var aligned = alignSessions(ma, mb);
      view.aligned = aligned;
      clear(app);
      var firstRow = aligned.rows[aligned.first];
      var verdict = aligned.first < 0
        ? h("div", { id: "verdict", class: "card summary" }, h("b", null, "No divergence"), " — " + aligned.rows.length + " aligned rows are identical (ids, times and usage aside).")
        : h("div", { id: "verdict", class: "card summary" }, h("b", { class: "status bad", style: "font-size:14px" }, "First divergence"),
          h("a", { href: "#row-" + aligned.first }, "turn " + firstRow.turn + (firstRow.kind === "step" ? ", step " + firstRow.step : firstRow.kind === "end" ? ", turn end" : "")),
          h("span", null, "differs in: " + firstRow.differs.join(", ")));
      append(app, topBar([h("span", { class: "title" }, "Compare"), h("a", { href: viewUrl(a), class: "mono" }, a), h("span", { class: "muted" }, "vs"),
        h("a", { href: viewUrl(b), class: "mono" }, b)]));
      var grid = h("div", { class: "cmp card" },
        h("div", { class: "head" }, ""), h("div", { class: "head mono" }, "A · " + a), h("div", { class: "head mono" }, "B · " + b));
      aligned.rows.forEach(function (row, index) {
        var cls = (row.differs.length ? " diverge" : "") + (index === aligned.first ? " first" : "");
        var attrs = { class: "where" + cls, id: "row-" + index, "data-turn": row.turn, "data-step": row.step || "", "data-kind": row.kind };
        if (row.differs.length) attrs["data-differs"] = row.differs.join(",");
        if (index === aligned.first) attrs["data-first-divergence"] = "1";
        if (row.kind === "turn") {
          append(grid, [h("div", attrs, "Turn " + row.turn), h("div", { class: "turnrow" + cls }, row.a ? (row.a.inherited ? "inherited · " : "") + row.a.steps.length + " steps" : "—"),
            h("div", { class: "turnrow" + cls }, row.b ? (row.b.inherited ? "inherited · " : "") + row.b.steps.length + " steps" : "—")]);
        } else if (row.kind === "end") {
          append(grid, [h("div", attrs, "end " + row.turn), h("div", { class: cls }, h("span", { class: "badge " + reasonClass(row.a.reason) }, reasonText(row.a.reason))),
            h("div", { class: cls }, h("span", { class: "badge " + reasonClass(row.b.reason) }, reasonText(row.b.reason)))]);
        } else {
          append(grid, [h("div", attrs, "t" + row.turn + " · step " + row.step, row.differs.length ? h("div", { class: "small status bad" }, row.differs.join(", ")) : h("div", { class: "same-mark" }, "same")),
            h("div", { class: cls.trim() }, compactStep(row.a)), h("div", { class: cls.trim() }, compactStep(row.b))]);
        }
      });
      append(app, h("div", { class: "page" }, verdict, grid));
      app.setAttribute("data-ready", "1");
      view.ready = true;
      if (aligned.first >= 0) {
        var target = document.getElementById("row-" + aligned.first);
        if (target) target.scrollIntoView({ block: "center" });
      }
    });
  }

  // ------------------------------------------------------------------ start

  function start() {
    var run = PAGE === "session" ? sessionPage : PAGE === "compare" ? comparePage : indexPage;
    return run().catch(showError);
  }
  start();
})();
`;
