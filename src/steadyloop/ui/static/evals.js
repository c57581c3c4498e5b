// The viewer's eval pages: every eval at "/evals", one at "/evals/NAME" (a bar chart of the pass
// rate and each scorer's mean, and the case table, each attempt linked to its run). It uses the
// helpers of app.js (`h`, `s`, `api`, `when`, `cost`, `count`), loaded after it.
"use strict";

const pct = (v) => (v === null || v === undefined ? "—" : `${(v * 100).toFixed(1)}%`);

async function evalsPage(main) {
  document.title = "evals · steadyloop";
  const rows = h("tbody");
  main.replaceChildren(
    h("nav", {}, h("a", { href: "/" }, "← all runs")),
    h("h1", {}, "Evals"),
    h("table", { class: "runs evals" },
      h("thead", {}, h("tr", {}, ["eval", "when", "agent", "cases", "attempts", "pass rate", "cost"]
        .map((c) => h("th", {}, c)))),
      rows));
  try {
    const found = await api("/api/evals");
    rows.replaceChildren(...(found.evals.length ? found.evals.map((e) => h("tr", { "data-name": e.name },
      h("td", {}, h("a", { href: `/evals/${encodeURIComponent(e.name)}` }, e.name)),
      h("td", {}, when(e.updated)),
      h("td", {}, e.agent),
      h("td", { class: "num" }, count(e.cases)),
      h("td", { class: "num" }, count(e.attempts)),
      h("td", { class: "num" }, pct(e.pass_rate)),
      h("td", { class: "num" }, cost(e.cost))))
      : [h("tr", {}, h("td", { colspan: 7, class: "empty" }, "No evals saved in this log yet."))]));
  } catch (error) {
    main.append(h("p", { class: "missing", role: "alert" }, error.message));
  }
}

async function evalPage(main, name) {
  document.title = `${name} · eval · steadyloop`;
  const back = h("nav", {}, h("a", { href: "/evals" }, "← all evals"));
  let report;
  try {
    report = await api(`/api/evals/${encodeURIComponent(name)}`);
  } catch (error) {
    main.replaceChildren(back, h("p", { class: "missing", role: "alert" }, error.message));
    return;
  }
  const sum = report.summary;
  const facts = [
    ["agent", report.agent], ["ran", when(report.updated)], ["cases", count(sum.cases)],
    ["attempts", count(sum.attempts)], ["pass rate", pct(sum.pass_rate)],
    ["errors", count(sum.errors)], ["cost", cost(sum.cost_usd)], ["tokens", count(sum.tokens)],
    ["turns", sum.turns.toFixed(1)],
    ["latency p50", sum.latency_p50 === null ? "—" : seconds(sum.latency_p50)],
    ["latency p95", sum.latency_p95 === null ? "—" : seconds(sum.latency_p95)],
  ];
  main.replaceChildren(back,
    h("h1", {}, h("span", { class: "run-id" }, report.name)),
    h("dl", { class: "facts" }, facts.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, v)))),
    h("section", {}, h("h2", {}, "Scores"), scoreChart(report)),
    h("section", {}, h("h2", {}, "Cases"), caseTable(report)));
}

// One bar per figure: the pass rate, then each scorer's mean; each bar's title names it.
function scoreChart(report) {
  const bars = [["pass rate", report.summary.pass_rate],
    ...report.scorers.map((n) => [n, report.summary.scores[n]])];
  const W = 640, row = 26, left = 180, plot = W - left - 70, H = bars.length * row + 8;
  const svg = s("svg", { class: "chart score-chart", viewBox: `0 0 ${W} ${H}`, width: W, height: H,
    role: "img", "aria-label": "pass rate and each scorer's mean" });
  bars.forEach(([label, value], i) => {
    const y = 4 + i * row;
    svg.append(
      s("text", { class: "axis-label", x: left - 8, y: y + 15, "text-anchor": "end" }, label),
      s("rect", { class: "lane", x: left, y, width: plot, height: row - 6 }),
      s("rect", { class: `bar${i ? "" : " pass"}`, "data-name": label, x: left, y,
        width: Math.max(plot * (value || 0), 0.5), height: row - 6 },
      s("title", {}, `${label}: ${pct(value)}`)),
      s("text", { class: "axis-label", x: left + plot + 6, y: y + 15 }, pct(value)));
  });
  return h("figure", { class: "chart-box" }, svg);
}

function caseTable(report) {
  const head = ["case", "pass rate", ...report.scorers, "attempts"];
  const body = report.cases.map((c) => h("tr", { "data-case": c.id },
    h("td", {}, c.id),
    h("td", { class: `num ${c.passed ? "ok" : "bad"}` }, pct(c.pass_rate)),
    ...report.scorers.map((n) => h("td", { class: "num", title: reasons(c, n) || null }, pct(c.scores[n]))),
    h("td", { class: "attempts" }, c.attempts.map((a) => h("a", {
      class: `attempt status-${a.status}${a.passed ? " passed" : ""}`,
      href: `/runs/${encodeURIComponent(a.run_id)}`,
      title: `#${a.repeat} ${a.status}${a.passed ? ", passed" : ", not passed"}${a.error ? `: ${a.error}` : ""}`,
    }, a.run_id)))));
  return h("table", { class: "runs cases" },
    h("thead", {}, h("tr", {}, head.map((c) => h("th", {}, c)))), h("tbody", {}, body));
}

// The reasons a case's attempts got from scorer `name`, one line each.
function reasons(c, name) {
  return c.attempts.map((a) => a.scores[name])
    .filter((sc) => sc && (sc.reason || sc.error))
    .map((sc) => sc.error || sc.reason).join("\n");
}
