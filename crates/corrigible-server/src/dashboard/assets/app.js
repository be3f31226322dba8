// corrigible dashboard: the run list, a run's timeline (live through the events stream) and
// a form to start a run. Plain JavaScript, no dependencies, no build step.
"use strict";

// The API key lives in this variable only: it is gone when the tab closes or reloads, and
// no other page or script on the origin can read it from storage.
let pageKey = "";
const $ = (id) => document.getElementById(id);

// ---------- small helpers ----------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") el.className = value;
    else if (name === "text") el.textContent = value;
    else if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

function apiKey() {
  return pageKey;
}

function authHeaders(extra) {
  const headers = Object.assign({}, extra || {});
  const key = apiKey();
  if (key) headers["Authorization"] = "Bearer " + key;
  return headers;
}

class ApiError extends Error {
  constructor(status, body) {
    const message = (body && body.error && body.error.message) || ("HTTP " + status);
    super(message);
    this.status = status;
    this.body = body;
  }
}

async function api(path, options) {
  const opts = Object.assign({}, options || {});
  opts.headers = authHeaders(opts.headers);
  const res = await fetch(path, opts);
  let body = null;
  const text = await res.text();
  if (text) {
    try { body = JSON.parse(text); } catch (_) { body = null; }
  }
  if (res.status === 401) showKeyPanel("This server needs an API key.");
  if (!res.ok) throw new ApiError(res.status, body);
  return body;
}

function flash(message) {
  const el = $("flash");
  if (!message) { el.hidden = true; return; }
  el.textContent = message;
  el.hidden = false;
}

function fmtMs(ms) {
  if (ms === null || ms === undefined) return "–";
  if (ms < 1) return ms.toFixed(2) + " ms";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  return Math.floor(ms / 60000) + " min " + Math.round((ms % 60000) / 1000) + " s";
}

function fmtWhen(unixMs) {
  const date = new Date(unixMs);
  const ago = (Date.now() - unixMs) / 1000;
  if (ago < 60) return "just now";
  if (ago < 3600) return Math.floor(ago / 60) + " min ago";
  if (ago < 86400) return Math.floor(ago / 3600) + " h ago";
  return date.toLocaleDateString() + " " + date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

function fmtNum(n) {
  return (n || 0).toLocaleString();
}

function statusBadge(run) {
  if (run.status === "running") return h("span", { class: "badge info", text: "running" });
  if (run.status === "failed") return h("span", { class: "badge bad", text: "failed" + (run.error_kind ? " · " + run.error_kind : "") });
  if (run.status === "interrupted") return h("span", { class: "badge warn", text: "interrupted" });
  return run.satisfied
    ? h("span", { class: "badge ok", text: "✓ satisfied" })
    : h("span", { class: "badge bad", text: "✗ not satisfied" });
}

function json(value) {
  try { return JSON.stringify(value, null, 2); } catch (_) { return String(value); }
}

// ---------- API key panel ----------

function showKeyPanel(reason) {
  $("key-panel").hidden = false;
  if (reason) flash(reason + " Enter it above.");
  $("key-input").focus();
}

$("key-button").addEventListener("click", () => {
  $("key-panel").hidden = !$("key-panel").hidden;
});
$("key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  pageKey = $("key-input").value.trim();
  $("key-input").value = "";
  $("key-panel").hidden = true;
  flash("");
  route();
});
$("key-clear").addEventListener("click", () => {
  pageKey = "";
  $("key-panel").hidden = true;
});

// ---------- server info and the form ----------

let info = null;

async function loadInfo() {
  try {
    info = await api("/v1/info");
  } catch (_) {
    return;
  }
  $("server-info").textContent = info.model + " · " + info.protocol + " protocol";
  const box = $("tool-choices");
  box.querySelectorAll("label").forEach((l) => l.remove());
  for (const tool of info.tools) {
    box.append(h("label", { title: tool.description },
      h("input", { type: "checkbox", name: "tool", value: tool.name, checked: "checked" }), " ", tool.name));
  }
  if (!info.tools.length) box.append(h("label", { class: "muted", text: "none" }));
  $("max-actions").placeholder = info.limits.max_actions;
  $("max-corrections").placeholder = info.limits.max_corrections;
}

$("run-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const error = $("form-error");
  error.hidden = true;
  const body = { prompt: $("prompt").value };
  const boxes = Array.from(document.querySelectorAll("#tool-choices input[name=tool]"));
  if (boxes.length && boxes.some((b) => !b.checked)) {
    body.tools = boxes.filter((b) => b.checked).map((b) => b.value);
  }
  const limits = {};
  const actions = $("max-actions").value.trim();
  const corrections = $("max-corrections").value.trim();
  if (actions !== "") limits.max_actions = Number(actions);
  if (corrections !== "") limits.max_corrections = Number(corrections);
  if (Object.keys(limits).length) body.limits = limits;
  const button = $("run-submit");
  button.disabled = true;
  try {
    const started = await api("/v1/runs", {
      method: "POST",
      headers: { "Content-Type": "application/json", "Prefer": "respond-async" },
      body: JSON.stringify(body),
    });
    $("prompt").value = "";
    location.hash = "#/runs/" + encodeURIComponent(started.run_id);
  } catch (e) {
    error.textContent = e.message;
    error.hidden = false;
  } finally {
    button.disabled = false;
  }
});

// ---------- the run list ----------

let listTimer = null;
let oldest = null;
let expanded = false; // older pages loaded: stop the automatic refresh

function runRow(run) {
  const tokens = fmtNum(run.input_tokens) + " / " + fmtNum(run.output_tokens);
  return h("tr", { "data-run": run.run_id, onclick: () => { location.hash = "#/runs/" + encodeURIComponent(run.run_id); } },
    h("td", { class: "when", title: new Date(run.created_at).toLocaleString(), text: fmtWhen(run.created_at) }),
    h("td", { class: "prompt", title: run.prompt, text: run.prompt }),
    h("td", {}, statusBadge(run)),
    h("td", {}, run.stop_reason ? h("code", { text: run.stop_reason }) : h("span", { class: "muted", text: "–" })),
    h("td", { class: "num", text: fmtNum(run.corrections) }),
    h("td", { class: "num", text: fmtNum(run.tool_calls) }),
    h("td", { class: "num", text: tokens }),
    h("td", { class: "num", text: fmtMs(run.duration_ms) }));
}

function filterParams(params) {
  for (const [id, name] of [["filter-status", "status"], ["filter-stop", "stop_reason"], ["filter-category", "category"], ["filter-model", "model"]]) {
    const value = $(id).value.trim();
    if (value) params.set(name, value);
  }
  const recent = $("filter-since").value;
  if (recent) params.set("since", String(Date.now() - Number(recent)));
  return params.size > 1;
}

async function loadRuns(append) {
  const params = new URLSearchParams({ limit: "25" });
  const filtered = filterParams(params);
  if (append && oldest) params.set("before", oldest);
  let page;
  try {
    page = await api("/v1/runs?" + params);
  } catch (e) {
    flash("Could not load runs: " + e.message);
    return;
  }
  const body = $("runs-body");
  if (!append) body.replaceChildren();
  expanded = append;
  for (const run of page.runs) body.append(runRow(run));
  oldest = page.next_before;
  $("more").hidden = !page.next_before;
  $("runs-empty").hidden = body.children.length > 0;
  $("runs-empty").textContent = filtered ? "No runs match these filters." : "No runs yet. Start one above.";
}

// ---------- corrections over time ----------

const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#2f5bd3", "#a35d00", "#1f8a4c", "#b3261e", "#7a3fb8", "#00838f", "#6d6d6d", "#c2185b"];

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) el.setAttribute(name, value);
  for (const child of children) if (child) el.append(child);
  return el;
}

function fmtSpan(ms) {
  const trim = (n) => String(Number(n.toFixed(1)));
  if (ms >= 3600000) return trim(ms / 3600000) + " h";
  if (ms >= 60000) return trim(ms / 60000) + " min";
  return trim(ms / 1000) + " s";
}

function fmtStart(ms, span) {
  const date = new Date(ms);
  return span <= 86400000
    ? date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : date.toLocaleDateString([], { month: "short", day: "numeric" });
}

// Stacked bars of corrections per category in each span of the window the "Since" filter
// names (the last day when it names none); a legend entry filters the runs by its category.
async function loadChart() {
  const span = Number($("filter-since").value) || 86400000;
  const until = Date.now() + 1;
  const params = new URLSearchParams({ since: String(until - span), until: String(until), buckets: "24" });
  let chart;
  try {
    chart = await api("/v1/stats/corrections?" + params);
  } catch (_) {
    return;
  }
  const colour = {};
  chart.categories.forEach((c, i) => { colour[c.category] = PALETTE[i % PALETTE.length]; });
  const max = Math.max(1, ...chart.buckets.map((b) => Object.values(b.counts).reduce((a, n) => a + n, 0)));
  const width = 720, height = 140, gap = 2, axis = 18;
  const barWidth = width / chart.buckets.length - gap;
  const bars = chart.buckets.map((bucket, i) => {
    let y = height - axis;
    const total = Object.values(bucket.counts).reduce((a, n) => a + n, 0);
    const group = svg("g", { class: "bar", "data-start": String(bucket.start), "data-total": String(total) },
      svg("title", {}, document.createTextNode(fmtStart(bucket.start, span) + ": " + total + " corrections"
        + Object.entries(bucket.counts).map(([c, n]) => "\n" + c + " " + n).join(""))));
    for (const c of chart.categories) {
      const n = bucket.counts[c.category] || 0;
      if (!n) continue;
      const h = (n / max) * (height - axis - 4);
      y -= h;
      group.append(svg("rect", { x: String(i * (barWidth + gap)), y: String(y), width: String(barWidth), height: String(h), fill: colour[c.category], "data-category": c.category }));
    }
    return group;
  });
  const last = chart.buckets.length - 1;
  const labels = [[0, "start"], [Math.floor(last / 2), "middle"], [last, "end"]].map(([i, anchor]) =>
    svg("text", { x: String(anchor === "end" ? width : i * (barWidth + gap)), y: String(height - 4),
      class: "axis", "text-anchor": anchor },
      document.createTextNode(fmtStart(chart.buckets[i].start, span))));
  $("chart").replaceChildren(svg("svg", { viewBox: "0 0 " + width + " " + height, role: "img",
    "aria-label": "Corrections per category over time" }, ...bars, ...labels));
  $("chart-window").textContent = "up to " + max + " per " + fmtSpan(chart.bucket_ms);
  $("chart-legend").replaceChildren(...chart.categories.map((c) =>
    h("li", { "data-category": c.category, title: "Show the runs with this correction",
      onclick: () => { $("filter-category").value = c.category; loadRuns(false); } },
      h("span", { class: "swatch" }),
      c.category + " " + fmtNum(c.total))));
  // The style attribute is refused by the page's CSP; the CSSOM is not.
  $("chart-legend").querySelectorAll("li").forEach((li) => {
    li.querySelector(".swatch").style.backgroundColor = colour[li.dataset.category];
  });
  $("chart-empty").hidden = chart.categories.length > 0;
}

$("refresh").addEventListener("click", () => { loadRuns(false); loadChart(); });
$("filters").addEventListener("change", (event) => {
  loadRuns(false);
  if (event.target.id === "filter-since") loadChart();
});
$("filters").addEventListener("submit", (event) => { event.preventDefault(); loadRuns(false); });
$("more").addEventListener("click", () => loadRuns(true));

// ---------- a run's timeline ----------

let stream = null; // AbortController of the open events stream

function resetRunView() {
  $("timeline").replaceChildren();
  $("run-answer").hidden = true;
  $("run-prompt").textContent = "";
  $("run-meta").textContent = "";
  $("run-status").replaceChildren();
  for (const id of ["total-model-calls", "total-corrections", "total-repairs", "total-tool-calls"]) $(id).textContent = "0";
  $("total-tokens").textContent = "0 / 0";
  $("total-time").textContent = "–";
}

function newTotals() {
  return { modelCalls: 0, corrections: 0, repairs: 0, toolCalls: 0, input: 0, output: 0 };
}

function showTotals(t) {
  $("total-model-calls").textContent = fmtNum(t.modelCalls);
  $("total-corrections").textContent = fmtNum(t.corrections);
  $("total-repairs").textContent = fmtNum(t.repairs);
  $("total-tool-calls").textContent = fmtNum(t.toolCalls);
  $("total-tokens").textContent = fmtNum(t.input) + " / " + fmtNum(t.output);
}

function item(kind, extraClass, label, ...body) {
  return h("li", { class: "tl-item " + kind + (extraClass ? " " + extraClass : ""), "data-kind": kind },
    h("div", { class: "tl-kind", text: label }),
    h("div", { class: "tl-body" }, ...body));
}

const OUTCOME_BADGE = { ok: "ok", rejected: "warn", failed: "bad", circuit_open: "violet" };
const BREAKER_BADGE = { closed: "ok", half_open: "warn", open: "bad" };

function thought(reasoning) {
  const fixes = reasoning.recalculated || [];
  const tokens = reasoning.tokens != null ? fmtNum(reasoning.tokens) + " tokens" : "reasoning";
  return h("details", { class: "tl-thought" },
    h("summary", { text: "thought · " + tokens + (reasoning.truncated ? " · cut at its bound" : "")
      + (reasoning.set_aside ? " · set aside" : "")
      + (fixes.length ? " · " + fixes.length + " recalculated" : "") }),
    h("div", { class: "tl-message", text: reasoning.text || "" }),
    ...fixes.map((f) => h("div", { class: "tl-line" },
      h("span", { class: "badge warn", text: "recalculated" }),
      h("code", { text: f.expression + " = " + f.stated + " → " + f.value }))));
}

const PROBE_FINDINGS = {
  native_call: "the server returned the call in tool_calls",
  call_as_text: "the server returned the call written in the reply text",
  empty_reply: "the server returned an empty reply",
  no_call: "the server returned text with no call",
};

function protocolReason(reason) {
  if (!reason || reason.by !== "probe") return "";
  return " (probed: " + (PROBE_FINDINGS[reason.finding] || reason.finding) + ")";
}

const KIND_LABEL = {
  system: "system", example: "example", request: "request", reply: "reply",
  tool_result: "tool result", feedback: "correction feedback",
};

function messageItem(m, isNew) {
  const label = (KIND_LABEL[m.kind] || m.kind || m.role) + (m.tool_name ? " · " + m.tool_name : "");
  return h("li", { class: "msg " + (m.kind || "reply") + (isNew ? " new" : ""), "data-kind": m.kind || "reply" },
    h("div", { class: "msg-head" },
      h("span", { class: "badge" + (m.kind === "feedback" ? " warn" : m.is_error ? " bad" : ""), text: label }),
      h("span", { class: "tl-detail", text: m.role }),
      isNew ? h("span", { class: "tl-detail", text: "new in this call" }) : null),
    m.content ? h("div", { class: "tl-message", text: m.content }) : null,
    ...(m.tool_calls || []).map((c) => h("pre", { class: "tl-json", text: c.name + "(" + c.arguments + ")" })));
}

// The messages a model call was sent: the whole conversation, the ones new since the
// previous call marked, correction feedback set apart.
function sentMessages(sent) {
  const feedback = sent.messages.filter((m) => m.kind === "feedback").length;
  return h("details", { class: "tl-messages" },
    h("summary", { text: "messages sent · " + sent.messages.length + " (" + sent.added + " new"
      + (feedback ? ", " + feedback + " correction feedback" : "") + ")" }),
    h("ol", { class: "msg-list" },
      ...sent.messages.map((m, i) => messageItem(m, i >= sent.messages.length - sent.added))));
}

function renderEvent(ev, state) {
  const { totals, corrections } = state;
  switch (ev.type) {
    case "messages": {
      state.conversation = state.conversation.slice(0, ev.kept).concat(ev.added || []);
      state.sent = { messages: state.conversation, added: (ev.added || []).length };
      return null;
    }
    case "run_started":
      return item("run_started", null, "Started",
        h("div", { class: "tl-line" }, h("span", { text: "model " }), h("code", { text: ev.model }),
          h("span", { class: "tl-detail", text: ev.protocol + " protocol" + protocolReason(ev.protocol_reason) })));
    case "model_call": {
      const r = ev.record;
      const sent = state.sent;
      state.sent = null;
      totals.modelCalls += 1;
      totals.input += r.input_tokens || 0;
      totals.output += r.output_tokens || 0;
      return item("model_call", null, "Model call",
        h("div", { class: "tl-line" },
          h("span", { class: "tl-stage", text: r.stage }),
          h("span", { class: "tl-detail", text: fmtMs(r.latency_ms) }),
          h("span", { class: "tl-detail", text: fmtNum(r.input_tokens) + " → " + fmtNum(r.output_tokens) + " tokens" }),
          r.transport_retries ? h("span", { class: "badge warn", text: r.transport_retries + " transport retries" }) : null,
          r.identical_retry ? h("span", { class: "badge warn", text: "identical retry" }) : null),
        r.reasoning ? thought(r.reasoning) : null,
        sent ? sentMessages(sent) : null);
    }
    case "decision": {
      const d = ev.decision || {};
      const isFinal = d.state === "final";
      return item("decision", null, "Decision",
        h("div", { class: "tl-line" },
          h("span", { class: "tl-stage", text: ev.stage }),
          isFinal
            ? h("span", { class: "badge " + (d.satisfied ? "ok" : "bad"), text: d.satisfied ? "final · satisfied" : "final · not satisfied" })
            : h("span", { class: "badge info", text: "action · " + d.tool })),
        d.reason ? h("div", { class: "tl-message", text: d.reason }) : null,
        isFinal ? h("div", { class: "tl-message", text: d.final_summary || "" })
          : h("pre", { class: "tl-json", text: json(d.tool_input) }));
    }
    case "rejection": {
      const r = ev.record;
      totals.corrections += 1;
      const status = h("span", { class: "badge", "data-corrected": "false", text: "not corrected" });
      corrections[ev.index] = status;
      return item("rejection", null, "Correction",
        h("div", { class: "tl-line" },
          h("span", { class: "tl-stage", text: r.stage }),
          h("span", { class: "badge warn category", text: r.rule && r.rule !== r.category ? r.category + ": " + r.rule : r.category }),
          r.tool ? h("code", { text: r.tool }) : null,
          h("span", { class: "tl-detail", text: "attempt " + r.attempt }),
          status),
        h("div", { class: "tl-message", text: r.error }));
    }
    case "corrected": {
      const status = corrections[ev.index];
      if (status) {
        status.className = "badge ok";
        status.textContent = "✓ corrected";
        status.setAttribute("data-corrected", "true");
      }
      return null;
    }
    case "repair": {
      const r = ev.record;
      totals.repairs += 1;
      return item("repair", null, "Repair",
        h("div", { class: "tl-line" },
          h("span", { class: "tl-stage", text: r.stage }),
          h("span", { class: "badge violet", text: r.kind }),
          h("span", { class: "tl-detail", text: "fixed locally, no model call" })));
    }
    case "tool_call": {
      const r = ev.record;
      totals.toolCalls += r.attempts || 0;
      return item("tool_call", r.outcome, "Tool call",
        h("div", { class: "tl-line" },
          h("code", { text: r.tool }),
          h("span", { class: "badge " + (OUTCOME_BADGE[r.outcome] || ""), text: r.outcome }),
          h("span", { class: "tl-detail", text: "step " + r.step }),
          h("span", { class: "tl-detail", text: r.attempts + (r.attempts === 1 ? " attempt" : " attempts") + (r.same_result ? ", same result as before" : "") }),
          h("span", { class: "tl-detail", text: fmtMs(r.latency_ms) })),
        h("pre", { class: "tl-json", text: "input: " + json(r.input) + (r.outcome === "ok" ? "\noutput: " + json(r.output) : "") }),
        r.error ? h("div", { class: "tl-message", text: r.error }) : null);
    }
    case "verification": {
      const r = ev.record;
      const verdict = r.error ? ["warn", "no report · accepted"]
        : r.objected ? ["bad", "objection proven · sent back"] : ["ok", "nothing proven wrong · accepted"];
      return item("verification", null, "Check",
        h("div", { class: "tl-line" },
          h("span", { class: "tl-stage", text: r.stage }),
          h("span", { class: "badge " + verdict[0], text: verdict[1] }),
          h("span", { class: "tl-detail", text: "by " + r.model }),
          h("span", { class: "tl-detail", text: fmtMs(r.latency_ms) }),
          h("span", { class: "tl-detail", text: fmtNum(r.input_tokens) + " → " + fmtNum(r.output_tokens) + " tokens" })),
        r.reason ? h("div", { class: "tl-message", text: r.reason }) : null,
        r.error ? h("div", { class: "tl-message", text: r.error }) : null,
        ...(r.comparisons || []).map((c) => h("div", { class: "tl-line" },
          h("span", { class: "tl-detail", text: "answer" }), h("code", { text: c.answer_says || "—" }),
          h("span", { class: "tl-detail", text: "evidence" }), h("code", { text: c.quote || "—" }),
          c.objection
            ? h("span", { class: "badge bad", text: c.objection })
            : h("span", { class: "badge", text: "dropped · " + (c.dropped || "") }))));
    }
    case "breaker": {
      const t = ev.transition;
      return item("breaker", null, "Breaker",
        h("div", { class: "tl-line" },
          h("code", { text: t.tool }),
          h("span", { class: "badge " + (BREAKER_BADGE[t.from] || ""), text: t.from }),
          h("span", { text: "→" }),
          h("span", { class: "badge " + (BREAKER_BADGE[t.to] || ""), text: t.to }),
          h("span", { class: "tl-detail", text: t.failures + " consecutive failures" })));
    }
    case "run_finished": {
      const u = ev.usage || {};
      totals.modelCalls = u.model_calls;
      totals.corrections = u.corrections;
      totals.toolCalls = u.tool_calls;
      totals.input = u.input_tokens;
      totals.output = u.output_tokens;
      return item("run_finished", null, "Finished",
        h("div", { class: "tl-line" },
          h("span", { class: "badge " + (ev.satisfied ? "ok" : "bad"), text: ev.satisfied ? "✓ satisfied" : "✗ not satisfied" }),
          h("code", { text: ev.stop_reason })));
    }
    case "run_failed":
      return item("run_failed", null, "Failed",
        h("div", { class: "tl-message", text: ev.error }));
    default:
      return null;
  }
}

async function showRunHeader(id) {
  try {
    const run = await api("/v1/runs/" + encodeURIComponent(id));
    $("run-prompt").textContent = run.prompt;
    $("run-status").replaceWith(Object.assign(statusBadge(run), { id: "run-status" }));
    const meta = [run.model, run.protocol + " protocol", "started " + new Date(run.created_at).toLocaleString()];
    if (run.stop_reason) meta.push("stop reason: " + run.stop_reason);
    $("run-meta").textContent = meta.join(" · ");
    $("total-time").textContent = fmtMs(run.duration_ms);
    const answer = $("run-answer");
    const report = run.report;
    if (report && (report.final_summary || report.missing)) {
      answer.replaceChildren(
        h("span", { class: "label", text: report.final_summary ? "Final answer" : "Missing" }),
        report.final_summary || report.missing);
      answer.hidden = false;
    } else if (run.error) {
      answer.replaceChildren(h("span", { class: "label", text: "Error" }), run.error);
      answer.hidden = false;
    }
    return run;
  } catch (e) {
    flash(e.status === 404 ? "No run with id " + id : "Could not load the run: " + e.message);
    return null;
  }
}

// Reads the events stream with fetch (so the API key header can be sent) and parses SSE.
async function followEvents(id, onEvent, onEnd, signal) {
  const res = await fetch("/v1/runs/" + encodeURIComponent(id) + "/events", {
    headers: authHeaders({ Accept: "text/event-stream" }),
    signal,
  });
  if (!res.ok || !res.body) throw new ApiError(res.status, null);
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        const val = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (field === "event") type = val;
        else if (field === "data") data.push(val);
      }
      if (!data.length) continue;
      let parsed = null;
      try { parsed = JSON.parse(data.join("\n")); } catch (_) { continue; }
      if (type === "end") { onEnd(parsed); return; }
      onEvent(parsed);
    }
  }
  onEnd(null);
}

async function showRun(id) {
  resetRunView();
  const run = await showRunHeader(id);
  if (!run) return;
  const state = { totals: newTotals(), corrections: {}, conversation: [], sent: null };
  const timeline = $("timeline");
  $("live").hidden = run.status !== "running";
  if (stream) stream.abort();
  const controller = new AbortController();
  stream = controller;
  try {
    await followEvents(id, (ev) => {
      const el = renderEvent(ev, state);
      if (el) timeline.append(el);
      showTotals(state.totals);
    }, async () => {
      $("live").hidden = true;
      if (stream === controller) await showRunHeader(id);
    }, controller.signal);
  } catch (e) {
    if (e.name !== "AbortError") flash("Events stream failed: " + e.message);
  }
}

// ---------- routing ----------

function route() {
  flash("");
  if (stream) { stream.abort(); stream = null; }
  if (listTimer) { clearInterval(listTimer); listTimer = null; }
  const match = location.hash.match(/^#\/runs\/(.+)$/);
  $("view-list").hidden = !!match;
  $("view-run").hidden = !match;
  if (match) {
    showRun(decodeURIComponent(match[1]));
  } else {
    if (!info) loadInfo();
    loadRuns(false);
    loadChart();
    listTimer = setInterval(() => {
      if (document.hidden) return;
      if (!expanded) loadRuns(false);
      loadChart();
    }, 5000);
  }
}

window.addEventListener("hashchange", route);
loadInfo();
route();
