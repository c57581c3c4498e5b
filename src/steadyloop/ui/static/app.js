// The run viewer's page: the run list at "/", one run at "/runs/KEY". It reads the JSON API of
// the server that sent it, draws the timeline and charts as SVG, and asks again every second so
// a live run grows on screen. It loads nothing from anywhere else.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const FOLLOW_MS = 1000;
const CHUNK = 400; // transcript entries added at a time
const MANY_BARS = 200; // a chart of more turns draws them as one shape
// Runs that ended this way never change again (every other status can still be resumed).
const FINAL = ["answered", "limit"];

// -- elements -------------------------------------------------------------------------------

const present = (nodes) => nodes.filter((n) => n !== null && n !== undefined && n !== false);

function make(namespace, tag, attrs, children) {
  const node = namespace ? document.createElementNS(namespace, tag) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of present(children.flat())) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
const h = (tag, attrs, ...children) => make(null, tag, attrs, children);
const s = (tag, attrs, ...children) => make(SVG, tag, attrs, children);

// -- words and numbers ----------------------------------------------------------------------

const pad = (n) => String(n).padStart(2, "0");
function when(epoch) {
  const d = new Date(epoch * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
const count = (n) => (n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"));
// A run some of whose replies came without token counts shows its known tokens as a floor.
const tokens = (run) => (run.tokens_partial ? `≥ ${count(run.tokens)}` : count(run.tokens));
const cost = (usd) => (usd === null || usd === undefined ? "—" : `$${usd.toFixed(usd < 0.01 ? 4 : 2)}`);
function seconds(t) {
  if (t < 0.001) return "<1 ms";
  if (t < 1) return `${Math.round(t * 1000)} ms`;
  if (t < 60) return `${t.toFixed(2)} s`;
  return `${Math.floor(t / 60)} min ${Math.round(t % 60)} s`;
}
const plural = (n, word) => `${count(n)} ${word}${n === 1 ? "" : "s"}`;

// -- talking to the server ------------------------------------------------------------------

async function api(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  return body;
}

// Calls `look` now and then every `ms` while the page is open, until it returns true; says so
// while the server does not answer.
async function follow(look, ms) {
  const banner = h("p", { class: "offline", role: "status", hidden: true },
    "The viewer's server does not answer; trying again.");
  document.body.prepend(banner);
  for (;;) {
    try {
      if (!document.hidden && await look()) return;
      banner.hidden = true;
    } catch (error) {
      banner.hidden = false;
    }
    await new Promise((done) => setTimeout(done, ms));
  }
}

// -- the run list ---------------------------------------------------------------------------

const COLUMNS = ["run", "when", "model", "status", "session", "turns", "tokens", "cost", "prompt"];

function listPage(main) {
  const params = new URLSearchParams(location.search);
  const chosen = { status: params.get("status") || "", model: params.get("model") || "",
    q: params.get("q") || "", session: params.get("session") || "" };
  const session = h("a", { class: "session-filter", href: "/", hidden: !chosen.session,
    title: "show every run" }, `session ${chosen.session} ✕`);
  const status = h("select", { name: "status", "aria-label": "status" });
  const model = h("select", { name: "model", "aria-label": "model" });
  const search = h("input", { type: "search", name: "q", value: chosen.q,
    placeholder: "search prompts", "aria-label": "search prompts" });
  const shown = h("span", { class: "count", role: "status" });
  const rows = h("tbody");
  main.replaceChildren(
    h("form", { class: "filters", role: "search", onsubmit: (e) => e.preventDefault() },
      status, model, search, session, shown),
    h("table", { class: "runs" },
      h("thead", {}, h("tr", {}, COLUMNS.map((c) => h("th", { class: `col-${c}` }, c)))),
      rows));
  document.title = "steadyloop runs";

  let asked = 0;
  async function look() {
    const ask = ++asked;
    const query = new URLSearchParams(Object.entries(chosen).filter(([, v]) => v));
    const found = await api(`/api/runs?${query}`);
    if (ask !== asked) return; // a newer question was asked meanwhile
    options(status, "all statuses", found.statuses, chosen.status);
    options(model, "all models", found.models, chosen.model);
    shown.textContent = found.matching > found.runs.length
      ? `newest ${count(found.runs.length)} of ${plural(found.matching, "run")}`
      : plural(found.matching, "run");
    rows.replaceChildren(...(found.runs.length ? found.runs.map(runRow)
      : [h("tr", {}, h("td", { colspan: COLUMNS.length, class: "empty" },
        found.statuses.length ? "No run matches." : "No runs logged yet."))]));
    history.replaceState(null, "", `${query}` ? `/?${query}` : "/");
  }
  // A failure here is shown by the next regular look, if it lasts.
  const now = () => look().catch(() => {});
  status.addEventListener("change", () => { chosen.status = status.value; now(); });
  model.addEventListener("change", () => { chosen.model = model.value; now(); });
  let typing;
  search.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { chosen.q = search.value; now(); }, 150);
  });
  follow(look, 2 * FOLLOW_MS);
}

// Fills a filter's choices, unless they are the same as before (an open menu stays open).
function options(select, all, values, chosen) {
  const choices = ["", ...values, ...(chosen && !values.includes(chosen) ? [chosen] : [])];
  if (select.dataset.choices !== choices.join("\n")) {
    select.dataset.choices = choices.join("\n");
    select.replaceChildren(...choices.map((v) => h("option", { value: v }, v || all)));
  }
  select.value = chosen;
}

function runRow(run) {
  return h("tr", { "data-id": run.id },
    h("td", { class: "col-run" },
      h("a", { href: `/runs/${encodeURIComponent(run.key)}`, title: run.id }, run.id.slice(0, 8))),
    h("td", { class: "col-when" }, when(run.created)),
    h("td", { class: "col-model" }, run.model),
    h("td", { class: "col-status" }, h("span", { class: `status status-${run.status}` }, run.status)),
    h("td", { class: "col-session" }, run.session
      ? h("a", { href: `/?session=${encodeURIComponent(run.session)}`, title: "this session's runs, in order" },
        run.session) : ""),
    h("td", { class: "col-turns num" }, count(run.turns)),
    h("td", { class: "col-tokens num" }, tokens(run)),
    h("td", { class: "col-cost num" }, cost(run.cost)),
    h("td", { class: "col-prompt", title: run.prompt }, run.prompt));
}

// -- one run --------------------------------------------------------------------------------

async function runPage(main, key) {
  const head = h("section", { class: "run-head" });
  const timeline = h("div", { class: "timeline-box" });
  const charts = h("div", { class: "charts" });
  const entries = h("ol", { class: "transcript", id: "transcript" });
  main.replaceChildren(
    h("nav", {}, h("a", { href: "/" }, "← all runs")),
    head,
    h("section", {}, h("h2", {}, "Timeline"), timeline),
    h("section", {}, h("h2", {}, "Per turn"), charts),
    h("section", {}, h("h2", {}, "Transcript"), entries));

  const path = `/api/runs/${encodeURIComponent(key)}`;
  let page = null;
  let seen = -1;
  let missing = []; // numbers at or below `seen` with no event yet: a resume may fill them
  let status = null;
  let targeted = false; // the entry the address points at was looked for
  addEventListener("hashchange", showTarget);
  function draw() {
    drawHead(head, page.run);
    drawTimeline(timeline, page.timeline, page.run.status);
    drawCharts(charts, page.turns);
    document.getElementById("live").hidden = page.run.status !== "running";
    document.title = `${page.run.id.slice(0, 8)} · ${page.run.status} · steadyloop`;
  }
  async function look() {
    let fresh;
    if (page === null) {
      try {
        [page, fresh] = await Promise.all([api(path), api(`${path}/events`)]);
      } catch (error) {
        main.replaceChildren(h("nav", {}, h("a", { href: "/" }, "← all runs")),
          h("p", { class: "missing", role: "alert" }, error.message));
        return true;
      }
      draw();
    } else {
      fresh = await api(`${path}/events?after=${seen}&missing=${missing.join(",")}`);
      if (fresh.entries.length || fresh.status !== status || fresh.status === "running") {
        page = await api(path);
        draw();
      }
    }
    // Stay at the bottom of a live run if the reader is there (measured only then: it costs a layout).
    const stay = status === "running" && fresh.entries.length &&
      innerHeight + scrollY >= document.body.scrollHeight - 40;
    status = fresh.status;
    seen = fresh.last_seq;
    missing = fresh.missing;
    await appendEntries(entries, fresh.entries);
    linkChildren(page.run.links.children);
    if (!targeted) {
      targeted = true;
      showTarget();
    }
    if (stay) scrollTo(0, document.body.scrollHeight);
    return FINAL.includes(status);
  }
  follow(look, FOLLOW_MS);
}

// Appends transcript entries a few hundred at a time, so that a long run's page paints and
// answers the reader while the rest is added.
async function appendEntries(list, entries) {
  for (let i = 0; i < entries.length; i += CHUNK) {
    if (i) await new Promise((done) => setTimeout(done));
    list.append(...entries.slice(i, i + CHUNK).map(entry));
  }
}

function drawHead(head, run) {
  const facts = [
    ["model", run.model], ["started", when(run.created)], ["turns", count(run.turns)],
    ["tokens", tokens(run)], ["cost", cost(run.cost)],
    ["tool calls", count(run.usage.tool_calls)],
  ];
  head.replaceChildren(...present([
    h("h1", {}, h("span", { class: "run-id", title: run.id }, run.id.slice(0, 8)), " ",
      h("span", { class: `status status-${run.status}` }, run.status),
      run.stop_reason && run.stop_reason !== "end_turn"
        ? h("span", { class: "stop" }, run.stop_reason) : null),
    h("dl", { class: "facts" }, facts.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v)))),
    run.error ? h("p", { class: "run-error", role: "alert" }, run.error) : null,
    related(run),
    h("p", { class: "full-id" }, run.id)]));
}

// A run page's address: the id is one encoded path segment, "/" and "%" included.
const runHref = (id) => `/runs/${encodeURIComponent(id)}`;
// Where a call's entry is on its run's page (and the id that entry carries).
const callAnchor = (callId) => `call-${callId}`;
const callHref = (runId, callId) => `${runHref(runId)}#${encodeURIComponent(callAnchor(callId))}`;

// The runs this one is linked to, each a link to its page: its session (its place there, the
// runs just before and after it, and the session's list), the run it continued when that is not
// the session's run before it, the run and call that started it as a sub-agent, and the
// sub-agent runs it started. A linked run this log does not hold is named, not linked.
function related(run) {
  const l = run.links;
  const logged = l.logged;
  const go = (id, text, attrs) => (logged[id]
    ? h("a", { href: runHref(id), title: `${id}\n${logged[id].prompt}`, ...attrs }, text || id.slice(0, 8))
    : h("span", { class: "elsewhere", title: `${id}: not in this log` }, text || id.slice(0, 8)));
  const rows = [];
  let before = null;
  if (l.session) {
    const runs = l.session_runs;
    const at = runs.indexOf(run.id);
    before = at > 0 ? runs[at - 1] : null;
    const after = at >= 0 && at < runs.length - 1 ? runs[at + 1] : null;
    rows.push(["session", [h("span", { class: "session-name" }, l.session),
      at >= 0 ? h("span", { class: "place" }, `run ${at + 1} of ${runs.length}`) : null,
      before ? go(before, "← previous run", { rel: "prev" }) : null,
      after ? go(after, "next run →", { rel: "next" }) : null,
      h("a", { href: `/?session=${encodeURIComponent(l.session)}` },
        `all ${plural(runs.length, "run")} in order`)]]);
  }
  if (l.previous && l.previous !== before) {
    rows.push(["continues", [go(l.previous, null, { class: "run-link" }), prompt(logged[l.previous])]]);
  }
  if (l.parent) {
    const call = logged[l.parent]
      ? h("a", { href: callHref(l.parent, l.parent_call), class: "call-link" }, `call ${l.parent_call}`)
      : h("span", {}, `call ${l.parent_call}`);
    rows.push(["sub-agent of", [go(l.parent, null, { class: "run-link" }), call, prompt(logged[l.parent])]]);
  }
  if (l.children.length) {
    rows.push(["sub-agent runs", [h("ul", { class: "children" }, l.children.map((child) =>
      h("li", {}, go(child.id, null, { class: "run-link" }),
        h("a", { href: `#${encodeURIComponent(callAnchor(child.call))}`, class: "call-link" },
          `call ${child.call}`),
        h("span", { class: `status status-${logged[child.id].status}` }, logged[child.id].status),
        prompt(logged[child.id]))))]]);
  }
  if (!rows.length) return null;
  return h("nav", { class: "related", "aria-label": "related runs" },
    h("dl", {}, rows.map(([name, parts]) => h("div", {}, h("dt", {}, name), h("dd", {}, parts)))));
}

const prompt = (run) => (run ? h("span", { class: "prompt", title: run.prompt }, run.prompt) : null);

// Links each call of the transcript that started a sub-agent run to that run: the run may be
// logged after its call, so this is done again each time the page is drawn.
function linkChildren(children) {
  for (const child of children) {
    const call = document.getElementById(callAnchor(child.call));
    if (call && !call.querySelector(".child-run")) {
      call.append(" ", h("a", { href: runHref(child.id), class: "child-run" },
        `sub-agent run ${child.id.slice(0, 8)} →`));
    }
  }
}

// Brings the entry the address points at ("#call-ID", "#eSEQ") into view once it is on the
// page, marked and focused, so a reader (and a screen reader) lands on it.
function showTarget() {
  let id;
  try {
    id = decodeURIComponent(location.hash.slice(1));
  } catch (error) {
    return;
  }
  const target = id ? document.getElementById(id) : null;
  if (!target) return;
  document.querySelector(".target")?.classList.remove("target");
  target.classList.add("target");
  target.tabIndex = -1;
  target.scrollIntoView({ block: "center" });
  target.focus({ preventScroll: true });
}

// -- the timeline ---------------------------------------------------------------------------

const LANE = 20, GAP = 4, TOP = 24, LABELS = 64;
const STEPS = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60,
  120, 300, 600, 900, 1800, 3600, 7200, 14400, 43200, 86400];

function drawTimeline(box, line, status) {
  const span = Math.max(line.end - line.start, 0.001);
  const models = line.marks.filter((m) => m.kind === "model").length;
  const width = Math.max(box.clientWidth - 2 || 900, Math.min(30000, models * 16));
  const plot = width - LABELS - 12;
  const x = (t) => LABELS + ((t - line.start) / span) * plot;
  const height = TOP + line.lanes * (LANE + GAP) + 2;
  const tools = line.marks.filter((m) => m.kind === "tool").length;
  const svg = s("svg", { class: "timeline", width, height, viewBox: `0 0 ${width} ${height}`,
    role: "group", "aria-label": `timeline of ${plural(models, "model call")} and ${plural(tools, "tool call")}` });
  for (let lane = 0; lane < line.lanes; lane++) {
    const y = TOP + lane * (LANE + GAP);
    svg.append(s("rect", { class: "lane", x: LABELS, y, width: plot, height: LANE }),
      s("text", { class: "lane-name", x: LABELS - 8, y: y + LANE / 2 }, lane ? `call ${lane}` : "model"));
  }
  const step = STEPS.find((t) => (t / span) * plot >= 90) || STEPS[STEPS.length - 1];
  for (let t = 0; t <= span; t += step) {
    svg.append(s("line", { class: "tick", x1: x(line.start + t), x2: x(line.start + t), y1: TOP - 6, y2: height }),
      s("text", { class: "tick-label", x: x(line.start + t), y: TOP - 10 }, t ? seconds(t) : "0"));
  }
  for (const mark of line.marks) svg.append(timelineMark(mark, x, height, status));
  svg.addEventListener("click", (event) => {
    const mark = event.target.closest(".mark");
    if (mark) document.getElementById(`e${mark.dataset.seq}`)?.scrollIntoView({ block: "center" });
  });
  const atEnd = box.scrollLeft + box.clientWidth >= box.scrollWidth - 4;
  const left = box.scrollLeft;
  box.replaceChildren(svg);
  box.scrollLeft = atEnd && status === "running" ? box.scrollWidth : left;
}

function timelineMark(mark, x, height, status) {
  if (mark.kind === "compacted" || mark.kind === "limit") {
    const label = mark.kind === "limit" ? `stopped: ${mark.name}` : "compaction";
    return s("g", { class: `mark ${mark.kind}`, "data-kind": mark.kind, "data-seq": mark.seq,
      "aria-label": label },
      s("title", {}, label),
      s("line", { x1: x(mark.start), x2: x(mark.start), y1: TOP, y2: height }),
      s("path", { d: `M${x(mark.start)} ${TOP - 4}l4 4l-4 4l-4 -4z` }));
  }
  const took = mark.end - mark.start;
  const words = [mark.name];
  if (mark.kind === "model") words.push(`turn ${mark.turn}`);
  words.push(seconds(took));
  if (mark.retries) words.push(`${mark.retries + 1} attempts`);
  if (mark.error) words.push(mark.kind === "model" ? "no reply" : "error");
  if (mark.open) words.push(status === "running" ? "running" : "never finished");
  const label = words.join(" · ");
  const left = x(mark.start);
  const wide = Math.max(2, x(mark.end) - left);
  const y = TOP + mark.lane * (LANE + GAP);
  const classes = ["mark", mark.kind, mark.error && "error", mark.open && "open"].filter(Boolean);
  const group = s("g", { class: classes.join(" "), "data-kind": mark.kind, "data-name": mark.name,
    "data-lane": mark.lane, "data-seq": mark.seq, "aria-label": label },
  s("title", {}, label),
  s("rect", { x: left, y, width: wide, height: LANE, rx: 3 }));
  if (wide > 48) {
    const fits = Math.floor((wide - 8) / 6.6);
    const text = mark.name.length > fits ? `${mark.name.slice(0, fits - 1)}…` : mark.name;
    group.append(s("text", { class: "mark-name", x: left + 5, y: y + LANE / 2 }, text));
  }
  return group;
}

// -- charts ---------------------------------------------------------------------------------

function drawCharts(box, turns) {
  const charts = [barChart("context tokens sent", turns, (t) => t.context_tokens, count,
    turns.length ? `limit ${count(turns[turns.length - 1].max_context_tokens)}` : "")];
  if (turns.some((t) => t.cost !== null)) charts.push(barChart("cost", turns, (t) => t.cost, cost, ""));
  box.replaceChildren(...charts);
}

function barChart(title, turns, value, format, note) {
  const W = 460, H = 150, left = 56, bottom = 22, top = 8, plot = W - left - 8;
  const values = turns.map((t) => value(t) || 0);
  const most = Math.max(...values, 0) || 1;
  const y = (v) => top + (H - top - bottom) * (1 - v / most);
  const bar = plot / Math.max(turns.length, 1);
  const svg = s("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img",
    "aria-label": `${title} per turn` },
  s("line", { class: "axis", x1: left, x2: left + plot, y1: y(0), y2: y(0) }),
  s("text", { class: "axis-label", x: left - 6, y: y(most) + 4, "text-anchor": "end" }, format(most)),
  s("text", { class: "axis-label", x: left - 6, y: y(0), "text-anchor": "end" }, "0"),
  turns.length ? s("text", { class: "axis-label", x: left, y: H - 6 }, `turn ${turns[0].turn}`) : null,
  turns.length > 1 ? s("text", { class: "axis-label", x: left + plot, y: H - 6, "text-anchor": "end" },
    `turn ${turns[turns.length - 1].turn}`) : null);
  if (turns.length <= MANY_BARS) {
    turns.forEach((turn, i) => {
      const v = values[i];
      svg.append(s("rect", { class: "bar", x: left + i * bar + (bar > 4 ? 1 : 0), y: y(v),
        width: Math.max(bar - (bar > 4 ? 2 : 0), 0.5), height: Math.max(y(0) - y(v), 0.5) },
      s("title", {}, `turn ${turn.turn}: ${format(value(turn))}`)));
    });
  } else { // one shape for all: too narrow to point at one by one
    const outline = values.map((v, i) => `L${left + i * bar} ${y(v)}h${bar}`).join("");
    svg.append(s("path", { class: "bar", d: `M${left} ${y(0)}${outline}V${y(0)}Z` }));
  }
  return h("figure", { class: "chart-box" }, svg,
    h("figcaption", {}, `${title} per turn`, note ? h("span", { class: "note" }, ` · ${note}`) : null));
}

// -- transcript entries ---------------------------------------------------------------------

function entry(e) {
  const item = h("li", { class: `entry ${e.kind}${e.history ? " history" : ""}`,
    id: e.kind === "resumed" ? null : `e${e.seq}`, "data-kind": e.kind });
  item.append(...present(entryParts(e)));
  return item;
}

function entryParts(e) {
  switch (e.kind) {
    case "user":
      return [who(e.history ? "user · earlier history" : "user"), h("pre", { class: "text" }, e.text),
        ...(e.attachments || []).map((a) => h("p", { class: "marker attachment" }, `[${a}]`))];
    case "reply": {
      const meta = [];
      if (e.input_tokens !== null) meta.push(`${count(e.input_tokens)} in · ${count(e.output_tokens)} out`);
      if (e.cost !== null) meta.push(cost(e.cost));
      return [who(e.history ? "assistant · earlier history" : "assistant", meta.join(" · ")),
        e.reasoning ? h("details", { class: "reasoning" }, h("summary", {}, "thinking"),
          h("pre", { class: "text" }, e.reasoning)) : null,
        e.text ? h("pre", { class: "text" }, e.text) : null,
        e.stop_reason === "max_tokens" ? h("p", { class: "marker" }, "cut off by the output limit") : null,
        !e.text && !e.calls.length ? h("p", { class: "marker" }, "empty reply: no text and no tool calls") : null,
        e.calls.length ? h("ul", { class: "calls" }, e.calls.map((c) =>
          h("li", { id: e.history ? null : callAnchor(c.id) }, "→ ", h("code", {}, c.name),
            h("span", { class: "call-id" }, ` ${c.id}`)))) : null];
    }
    case "tool": {
      const meta = [];
      if (e.duration !== undefined) meta.push(seconds(e.duration));
      if (e.attempts > 1) meta.push(`${e.attempts} attempts`);
      meta.push(e.call_id);
      return [who(h("span", {}, h("span", { class: "icon" }, e.is_error ? "✗ " : "✓ "),
        h("code", {}, e.name), e.is_error ? h("span", { class: "flag error" }, "error") : null),
      meta.join(" · ")),
      e.arguments ? h("pre", { class: "args" }, e.arguments) : null,
      h("pre", { class: "text result" }, e.content),
      e.truncated ? h("p", { class: "marker truncated" },
        `truncated: the output had ${count(e.output_length)} characters; the model read its start and end`) : null];
    }
    case "summary":
      return [who(`summary of ${plural(e.replaced, "earlier message")}`), h("pre", { class: "text" }, e.text)];
    case "turn":
      return [`turn ${e.turn} · context ${count(e.context_tokens)} / ${count(e.max_context_tokens)} tokens`];
    case "retry":
      return [`↻ model call failed (${e.error}); attempt ${e.attempt} after ${seconds(e.wait)}`];
    case "compacted":
      return [`compaction: ${plural(e.replaced, "earlier message")} summarised · context ` +
        `${count(e.tokens_before)} → ${count(e.tokens_after)} tokens`];
    case "limit":
      return [`■ stopped: ${e.message}`];
    case "finished":
      return [e.stop_reason === "end_turn" ? "■ answered" : `■ finished: ${e.stop_reason}`];
    case "resumed":
      return ["⟳ resumed from the log"];
    default:
      return [who(e.name), h("pre", { class: "text" }, JSON.stringify(e.data, null, 2))];
  }
}

function who(name, meta) {
  return h("div", { class: "who" }, h("span", { class: "name" }, name),
    meta ? h("span", { class: "meta" }, meta) : null);
}

// -- which page -----------------------------------------------------------------------------

// A run's id is one encoded path segment ("tenant%2F42"); an id typed with its "/" as is
// ("/runs/tenant/42") opens that run too.
function runKey(path) {
  const match = path.match(/^\/runs\/(.+)$/);
  try {
    return match ? decodeURIComponent(match[1]) : null;
  } catch (error) { // not valid percent-encoding: the list
    return null;
  }
}

const main = document.getElementById("main");
const key = runKey(location.pathname);
const evalName = location.pathname.match(/^\/evals\/([^/]+)$/);
if (key !== null) runPage(main, key);
else if (location.pathname === "/evals") evalsPage(main);
else if (evalName) evalPage(main, decodeURIComponent(evalName[1]));
else listPage(main);
