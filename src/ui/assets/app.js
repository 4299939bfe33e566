// kftrainer ui - one page over the engine's JSON API (src/ui/api.c).
// Every string that comes from a job is put into the page as text
// (textContent, text nodes), never parsed as markup.
"use strict";

const state = { csrf: "", charts: false, stream: null, reader: null, cleanup: [] };

// ---- small DOM helpers ---------------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function main(...children) {
  const m = document.getElementById("main");
  m.replaceChildren(...children.filter((c) => c !== null && c !== undefined && c !== false));
  return m;
}

function enc(s) { return encodeURIComponent(s); }

function age(ts) {
  if (!ts) return "-";
  let s = Math.max(0, Math.floor((Date.now() - Date.parse(ts)) / 1000));
  if (s < 120) return s + "s";
  let m = Math.floor(s / 60);
  if (m < 10) return m + "m" + (s % 60 ? (s % 60) + "s" : "");
  if (m < 180) return m + "m";
  let h = Math.floor(m / 60);
  if (h < 48) return h + "h" + (m % 60 && h < 8 ? (m % 60) + "m" : "");
  return Math.floor(h / 24) + "d";
}

function duration(s) {
  if (s === null || s === undefined) return "-";
  s = Math.max(0, Math.round(s));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return (h ? h + "h" : "") + (h || m ? m + "m" : "") + r + "s";
}

// ETA counts down between reports, as `kftrainer get` shows it.
function eta(row) {
  if (row.remaining === undefined || row.remaining === null) return "-";
  if (["Complete", "Failed"].includes(row.status)) return "-";
  const since = row.reported ? (Date.now() - Date.parse(row.reported)) / 1000 : 0;
  return duration(row.remaining - Math.max(0, since));
}

// One argv word as a shell would need it written (what the step runs, readable).
function shellWord(w) {
  w = String(w);
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : "'" + w.replace(/'/g, "'\\''") + "'";
}

function statusBadge(s) { return el("span", { class: "status " + (s || "") }, s || "-"); }

function progressCell(p) {
  if (p === undefined || p === null) return "-";
  return el("span", {}, el("span", { class: "bar" }, barFill(p)), p + "%");
}

function barFill(p) {
  const s = el("span");
  s.style.width = Math.max(0, Math.min(100, p)) + "%";
  return s;
}

async function api(path, opts) {
  const r = await fetch(path, opts);
  const text = await r.text();
  let body;
  try { body = JSON.parse(text); } catch (e) { body = { text }; }
  if (!r.ok) throw new Error(body.error || body.problems || text || r.statusText);
  return body;
}

function post(path, body) {
  return api(path, { method: "POST", headers: { "X-KFT-CSRF": state.csrf }, body: body || "" });
}

// Esc (the dialog's cancel event) answers as Cancel does; Cancel has the focus
// first, so Enter alone never deletes.
function confirmDialog(text) {
  return new Promise((resolve) => {
    const d = document.getElementById("confirm");
    document.getElementById("confirm-text").textContent = text;
    const done = (v) => { d.close(); resolve(v); };
    document.getElementById("confirm-ok").onclick = () => done(true);
    document.getElementById("confirm-cancel").onclick = () => done(false);
    d.oncancel = (e) => { e.preventDefault(); done(false); };
    d.showModal();
    document.getElementById("confirm-cancel").focus();
  });
}

// The connection's state in words as well as the dot's colour.
function live(on) {
  const c = document.getElementById("conn");
  c.classList.toggle("live", on);
  c.textContent = on ? "live" : "offline";
  c.title = on ? "live updates: connected" : "live updates: not connected";
}

// Streams and timers of the page being left.
function leave() {
  if (state.stream) state.stream.close();
  state.stream = null;
  if (state.reader) state.reader.cancel().catch(() => {});
  state.reader = null;
  for (const f of state.cleanup) f();
  state.cleanup = [];
  live(false);
}

function watch(path, onData) {
  const es = new EventSource(path);
  es.onopen = () => live(true);
  es.onerror = () => live(false);
  es.onmessage = (ev) => { live(true); onData(JSON.parse(ev.data)); };
  state.stream = es;
}

// ---- jobs list -------------------------------------------------------------------

const listView = { filter: "", status: "", sort: "created", desc: true, rows: [] };

function jobsPage() {
  const q = el("input", { type: "search", id: "filter", placeholder: "Filter by name or runtime",
    "aria-label": "Filter by name, runtime or namespace",
    value: listView.filter, oninput: (e) => { listView.filter = e.target.value; drawRows(); } });
  const sel = el("select", { id: "status-filter", "aria-label": "Status",
    onchange: (e) => { listView.status = e.target.value; drawRows(); } },
    ["", "Created", "Running", "Suspended", "Complete", "Failed", "Terminating"].map((s) =>
      el("option", { value: s, selected: s === listView.status }, s || "All statuses")));
  const cols = [["name", "Name"], ["runtime", "Runtime"], ["status", "Status"], ["nodes", "Nodes"],
    ["restarts", "Restarts"], ["progress", "Progress"], ["eta", "ETA"], ["created", "Age"]];
  // Each header is a button (Tab, Enter, Space); aria-sort says the order.
  const head = el("tr", {}, cols.map(([k, label]) => el("th", { class: "sortable", "data-key": k, "aria-sort": "none" },
    el("button", { type: "button", class: "sort", id: "sort-" + k,
      onclick: () => { listView.desc = listView.sort === k ? !listView.desc : false; listView.sort = k; drawRows(); } }, label))));
  main(el("h1", {}, "TrainJobs"), el("div", { class: "toolbar" }, q, sel, el("span", { id: "count", class: "muted" })),
    el("table", { id: "jobs" }, el("thead", {}, head), el("tbody")));
  watch("/api/watch/jobs", (doc) => { listView.rows = doc.items || []; drawRows(); });
  const t = setInterval(drawRows, 1000); // ETA and age count on between events
  state.cleanup.push(() => clearInterval(t));
}

function sortValue(r, k) {
  if (k === "created") return r.created ? Date.parse(r.created) : 0;
  if (k === "eta") return r.remaining ?? Infinity;
  if (k === "nodes" || k === "progress" || k === "restarts") return Number(r[k] ?? -1);
  return String(r[k] ?? "");
}

function drawRows() {
  const body = document.querySelector("#jobs tbody");
  if (!body) return;
  const f = listView.filter.toLowerCase();
  let rows = listView.rows.filter((r) => (!listView.status || r.status === listView.status) &&
    (!f || (r.name || "").toLowerCase().includes(f) || (r.runtime || "").toLowerCase().includes(f) ||
     (r.namespace || "").toLowerCase().includes(f)));
  rows.sort((a, b) => {
    const x = sortValue(a, listView.sort), y = sortValue(b, listView.sort);
    return (x < y ? -1 : x > y ? 1 : 0) * (listView.desc ? -1 : 1);
  });
  for (const th of document.querySelectorAll("#jobs th")) {
    const on = th.dataset.key === listView.sort;
    th.classList.toggle("sorted", on);
    th.classList.toggle("desc", on && listView.desc);
    th.setAttribute("aria-sort", on ? (listView.desc ? "descending" : "ascending") : "none");
  }
  body.replaceChildren(...rows.map((r) => el("tr", { "data-job": r.name },
    el("td", {}, el("a", { href: "#/job/" + enc(r.namespace) + "/" + enc(r.name) }, r.name),
      r.namespace !== "default" ? el("div", { class: "muted" }, r.namespace) : null),
    el("td", {}, r.runtime || "-"), el("td", {}, statusBadge(r.status)), el("td", {}, r.nodes || "-"),
    el("td", {}, String(r.restarts ?? 0)), el("td", {}, progressCell(r.progress)),
    el("td", {}, eta(r)), el("td", { title: r.created || "" }, age(r.created)))));
  if (!rows.length)
    body.appendChild(el("tr", {}, el("td", { colspan: 8, class: "muted" },
      listView.rows.length ? "No job matches the filter." : (state.cluster ? "No TrainJobs yet: kubectl apply -f trainjob.yaml" : "No TrainJobs yet: kftrainer train -f trainjob.yaml"))));
  document.getElementById("count").textContent = rows.length + " of " + listView.rows.length;
}

// ---- one job --------------------------------------------------------------------

function jobPage(ns, name, tab) {
  const base = "#/job/" + enc(ns) + "/" + enc(name);
  const tabs = el("div", { class: "tabs" }, [["", "Overview"], ["logs", "Logs"], ["metrics", "Metrics"], ["yaml", "YAML"]]
    .map(([t, label]) => el("a", { href: base + (t ? "/" + t : ""), class: (tab || "") === t ? "active" : "", id: "tab-" + (t || "overview") }, label)));
  const actions = el("div", { class: "toolbar", id: "actions" },
    el("button", { id: "act-suspend", onclick: () => act(ns, name, "suspend") }, "Suspend"),
    el("button", { id: "act-resume", onclick: () => act(ns, name, "resume") }, "Resume"),
    el("button", { id: "act-delete", class: "danger", onclick: () => act(ns, name, "delete") }, "Delete"),
    el("span", { id: "act-msg", class: "muted" }));
  const body = el("div", { id: "tab-body" });
  main(el("h1", { id: "job-name" }, name), el("div", { class: "grid", id: "cards" }), actions, tabs, body);
  const apiBase = "/api/jobs/" + enc(ns) + "/" + enc(name);
  if (tab === "logs") logsTab(body, apiBase);
  else if (tab === "metrics") metricsTab(body, apiBase);
  else if (tab === "yaml") yamlTab(body, apiBase);
  else body.append(el("div", { id: "overview" }));
  watch("/api/watch/jobs/" + enc(ns) + "/" + enc(name), (doc) => {
    if (doc.error) {
      document.getElementById("cards").replaceChildren(el("div", { class: "error", id: "job-error" }, doc.error));
      if (doc.gone) { leave(); for (const b of actions.querySelectorAll("button")) b.disabled = true; }
      return;
    }
    state.job = doc;
    drawCards(doc);
    if (!tab) drawOverview(doc);
    for (const f of state.onJob || []) f(doc);
  });
}

async function act(ns, name, verb) {
  const what = { suspend: "Suspend", resume: "Resume", delete: "Delete" }[verb];
  const text = verb === "delete" ? "Delete TrainJob " + name + "? Its processes are stopped and its logs removed."
    : what + " TrainJob " + name + "?";
  if (!(await confirmDialog(text))) return;
  const msg = document.getElementById("act-msg");
  msg.textContent = what + "…";
  try {
    await post("/api/jobs/" + enc(ns) + "/" + enc(name) + "/" + verb);
    msg.textContent = what + ": done";
    if (verb === "delete") location.hash = "#/";
  } catch (e) {
    msg.textContent = what + " failed: " + e.message;
  }
}

// A reported metric as a card shows it: a number written with more digits than six
// significant ones need (torchtune's loss 10.665261268615723) as those six; anything else
// as it was sent. The card's title keeps the value whole.
function metricText(v) {
  const n = Number(v), s = String(+n.toPrecision(6));
  return typeof v === "string" && v.trim() !== "" && Number.isFinite(n) && s.length < v.length ? s : v;
}

function drawCards(doc) {
  const r = doc.row, ts = (doc.trainjob.status || {}).trainerStatus || {};
  const card = (k, v, id, title) => el("div", { class: "card", title }, el("div", { class: "k" }, k), el("div", { class: "v", id }, v));
  document.getElementById("cards").replaceChildren(
    card("Status", statusBadge(r.status), "card-status"), card("Runtime", r.runtime || "-"),
    card("Nodes", r.nodes || "-"), card("Restarts", String(r.restarts ?? 0)),
    card("Progress", r.progress !== undefined && r.progress !== null ? r.progress + "%" : "-", "card-progress"),
    card("ETA", eta(r)), card("Age", age(r.created)),
    ...(ts.metrics || []).slice(0, 6).map((m) => card(m.name, metricText(m.value), undefined, m.value)));
  // Why a failed job failed, whole (the node, its exit code and last lines): the
  // Failed condition's message, as text.
  const failed = ((doc.trainjob.status || {}).conditions || []).find((c) => c.type === "Failed" && c.status === "True");
  if (failed && failed.message)
    document.getElementById("cards").append(el("pre", { class: "error failure", id: "job-failure" }, failed.message));
  const st = r.status;
  const set = (id, on) => { const b = document.getElementById(id); if (b) b.disabled = !on; };
  set("act-suspend", ["Created", "Running"].includes(st));
  set("act-resume", st === "Suspended");
  set("act-delete", st !== "Terminating");
}

function table(headers, rows, id) {
  return el("table", { id }, el("thead", {}, el("tr", {}, headers.map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: headers.length, class: "muted" }, "None"))));
}

function drawOverview(doc) {
  const o = document.getElementById("overview");
  if (!o) return;
  const conds = ((doc.trainjob.status || {}).conditions || []).map((c) => el("tr", {},
    el("td", {}, c.type), el("td", {}, c.status), el("td", {}, c.reason || ""), el("td", {}, c.message || ""),
    el("td", { title: c.lastTransitionTime || "" }, age(c.lastTransitionTime))));
  const pods = doc.pods.map((p) => el("tr", {},
    el("td", {}, p.pod || p.step + "-" + p.index), el("td", {}, p.step), el("td", {}, String(p.index)),
    el("td", {}, statusBadge(p.state)), el("td", {}, String(p.restarts)),
    el("td", {}, p.state === "Succeeded" || p.state === "Failed" ? (p.signal ? "signal " + p.signal : String(p.exitCode)) : "-"),
    el("td", {}, [p.reason, p.message].filter(Boolean).join(": ")),
    el("td", {}, p.log ? el("a", { href: location.hash.replace(/\/(logs|metrics|yaml)$/, "") + "/logs?pod=" + enc(p.step + "/" + p.index) }, "logs") : "-")));
  const steps = doc.steps.map((s) => el("tr", {}, el("td", {}, s.step), el("td", {}, s.container),
    el("td", {}, el("code", { class: "argv" }, [...(s.command || []), ...(s.args || [])].map(shellWord).join(" ") || "(image default)")),
    el("td", {}, s.image || "")));
  const events = (doc.events || []).map((e) => el("tr", {}, el("td", {}, e.type || ""), el("td", {}, e.reason || ""),
    el("td", {}, ((e.involvedObject || {}).kind || "") + "/" + ((e.involvedObject || {}).name || "")),
    el("td", {}, e.message || ""), el("td", {}, age(e.lastTimestamp || e.eventTime || (e.metadata || {}).creationTimestamp))));
  o.replaceChildren(
    el("h2", {}, "Pods"), table(["Pod", "Step", "Index", "State", "Restarts", "Exit", "Reason", "Logs"], pods, "pods"),
    el("h2", {}, "Conditions"), table(["Type", "Status", "Reason", "Message", "Age"], conds, "conditions"),
    el("h2", {}, "Commands"), table(["Step", "Container", "Command", "Image"], steps, "commands"),
    el("h2", {}, "Events"), table(["Type", "Reason", "Object", "Message", "Age"], events, "events"));
}

// ---- logs ------------------------------------------------------------------------

const MAX_LINES = 20000;

function logsTab(body, apiBase) {
  const params = new URLSearchParams(location.hash.split("?")[1] || "");
  const pick = el("select", { id: "log-pod", "aria-label": "Pod" });
  const search = el("input", { type: "search", id: "log-search", placeholder: "Search the log",
    "aria-label": "Search the log" });
  const follow = el("input", { type: "checkbox", id: "log-follow", checked: true });
  const dl = el("a", { id: "log-download", href: "#" }, "Download");
  const pre = el("pre", { class: "log", id: "log" });
  const info = el("span", { class: "muted", id: "log-info" });
  body.append(el("div", { class: "toolbar" }, pick, el("label", {}, follow, " Follow"), search, dl, info), pre);
  let current = null, pending = "";
  const applySearch = () => {
    const q = search.value;
    let hits = 0;
    for (const line of pre.children) {
      const hit = q && line.textContent.includes(q);
      line.classList.toggle("hit", !!hit);
      line.classList.toggle("hidden", !!q && !hit);
      if (hit) hits++;
    }
    info.textContent = q ? hits + " matching lines" : pre.children.length + " lines";
  };
  search.addEventListener("input", applySearch);
  const addText = (text) => {
    pending += text;
    const parts = pending.split("\n");
    pending = parts.pop();
    const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 20;
    const q = search.value;
    for (const line of parts) {
      const d = el("div", { class: line.startsWith("==> ") ? "attempt" : "" }, line);
      if (q) { const hit = line.includes(q); d.classList.toggle("hit", hit); d.classList.toggle("hidden", !hit); }
      pre.appendChild(d);
    }
    while (pre.children.length > MAX_LINES) pre.removeChild(pre.firstChild);
    if (stick) pre.scrollTop = pre.scrollHeight;
    if (!q) info.textContent = pre.children.length + " lines";
  };
  const open = async (key) => {
    if (state.reader) { state.reader.cancel().catch(() => {}); state.reader = null; }
    pre.replaceChildren(); pending = ""; current = key;
    if (!key) return;
    const [step, index] = key.split("/");
    const url = apiBase + "/logs/" + enc(step) + "/" + enc(index);
    dl.setAttribute("href", url + "?download=1");
    try {
      const r = await fetch(url + "?tail=1048576" + (follow.checked ? "&follow=1" : ""));
      if (!r.ok) {
        let m = await r.text();
        try { m = JSON.parse(m).error || m; } catch (e) { /* plain text */ }
        addText("(no log: " + m + ")\n");
        return;
      }
      const reader = r.body.getReader(), dec = new TextDecoder();
      state.reader = reader;
      for (;;) {
        const { value, done } = await reader.read();
        if (done || current !== key) break;
        addText(dec.decode(value, { stream: true }));
      }
      if (pending && current === key) addText("\n");
    } catch (e) { /* the stream was cancelled */ }
  };
  pick.addEventListener("change", () => open(pick.value));
  follow.addEventListener("change", () => open(pick.value));
  const fill = (doc) => {
    const keys = doc.pods.filter((p) => p.log).map((p) => p.step + "/" + p.index);
    const have = [...pick.options].map((o) => o.value);
    if (keys.join() !== have.join()) {
      pick.replaceChildren(...keys.map((k) => el("option", { value: k }, k.replace("/", " #"))));
      if (current && keys.includes(current)) pick.value = current;
    }
    if (!current && keys.length) {
      const want = params.get("pod");
      const k = want && keys.includes(want) ? want : (keys.find((x) => x.startsWith("node/")) || keys[0]);
      pick.value = k;
      open(k);
    }
  };
  state.onJob = [fill];
  state.cleanup.push(() => { state.onJob = []; current = null; });
}

// ---- metrics ---------------------------------------------------------------------

function metricsTab(body, apiBase) {
  const series = new Map(); // name -> {x: [], y: []}
  let last = 0, loading = false;
  const box = el("div", { class: "charts", id: "charts" });
  if (!state.charts || !window.uPlot)
    body.append(el("div", { class: "notice", id: "no-charts" },
      "Charts are unavailable: this kftrainer was built without uPlot (scripts/install-deps.sh fetches it). The values are shown as numbers."));
  body.append(box);
  const plots = new Map();
  const point = (name, t, v) => {
    if (!Number.isFinite(v)) return;
    if (!series.has(name)) series.set(name, { x: [], y: [] });
    const s = series.get(name);
    s.x.push(t); s.y.push(v);
  };
  const draw = () => {
    if (!series.size && !box.children.length)
      box.append(el("p", { class: "muted", id: "no-metrics" }, "Nothing reported yet."));
    for (const [name, s] of series) {
      let p = plots.get(name);
      if (!p) {
        const nm = document.getElementById("no-metrics"); if (nm) nm.remove();
        const holder = el("div", { class: "chart", "data-metric": name }, el("h3", {}, name));
        box.append(holder);
        p = { holder, plot: null, table: null };
        if (state.charts && window.uPlot) {
          p.plot = new window.uPlot({ width: Math.max(300, holder.clientWidth - 20), height: 220, scales: { x: { time: true } },
            series: [{}, { label: name, stroke: "#2f6fde", width: 2, points: { show: s.x.length < 60 } }],
            legend: { show: true } }, [s.x, s.y], holder);
        } else {
          p.table = el("table", {}, el("thead", {}, el("tr", {}, el("th", {}, "Time"), el("th", {}, name))), el("tbody"));
          holder.append(p.table);
        }
        plots.set(name, p);
      }
      if (p.plot) p.plot.setData([s.x, s.y]);
      if (p.table) p.table.tBodies[0].replaceChildren(...s.x.slice(-50).map((t, i, a) => el("tr", {},
        el("td", {}, new Date(t * 1000).toLocaleTimeString()), el("td", {}, String(s.y[s.y.length - a.length + i])))));
      p.holder.setAttribute("data-points", String(s.x.length));
      p.holder.setAttribute("data-last", String(s.y[s.y.length - 1]));
    }
  };
  const load = async () => {
    if (loading) return;
    loading = true;
    try {
      const doc = await api(apiBase + "/metrics?after=" + last);
      for (const r of doc.items) {
        last = Math.max(last, r.id);
        const t = Date.parse(r.recorded) / 1000, ts = r.trainerStatus || {};
        if (ts.progressPercentage !== undefined) point("progress %", t, ts.progressPercentage);
        if (ts.estimatedRemainingSeconds !== undefined) point("remaining seconds", t, ts.estimatedRemainingSeconds);
        for (const m of ts.metrics || []) point(m.name, t, parseFloat(m.value));
      }
      draw();
    } catch (e) { /* the job went away */ }
    loading = false;
  };
  state.onJob = [(doc) => { if ((doc.lastReport || 0) > last) load(); }];
  state.cleanup.push(() => { state.onJob = []; });
  load();
}

// ---- YAML ------------------------------------------------------------------------

async function yamlTab(body, apiBase) {
  const pre = el("pre", { class: "yaml", id: "yaml" }, "Loading…");
  body.append(el("p", { class: "muted" }, "The TrainJob and the objects it runs from (Secret values are not shown)."), pre);
  try {
    const r = await fetch(apiBase + "/yaml");
    pre.textContent = await r.text();
  } catch (e) { pre.textContent = e.message; }
}

// ---- runtimes --------------------------------------------------------------------

async function runtimesPage() {
  main(el("h1", {}, "Runtimes"), el("p", { class: "muted" }, "Loading…"));
  let doc;
  try { doc = await api("/api/runtimes"); } catch (e) { main(el("h1", {}, "Runtimes"), el("div", { class: "error" }, e.message)); return; }
  const yaml = el("pre", { class: "yaml", id: "runtime-yaml" }, "Pick a runtime to see it.");
  const input = el("textarea", { id: "preview-input", rows: 14, spellcheck: "false",
    "aria-label": "TrainJob to preview (YAML or JSON)" });
  const out = el("pre", { class: "yaml", id: "preview-output" });
  const show = async (name, kind) => {
    yaml.textContent = "Loading…";
    const r = await fetch("/api/runtimes/" + enc(name) + "/yaml");
    yaml.textContent = await r.text();
    input.value = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: preview\nspec:\n" +
      "  runtimeRef:\n    kind: " + (kind || "ClusterTrainingRuntime") + "\n    name: " + name + "\n  trainer:\n    numNodes: 2\n    command: [python3, train.py]\n";
  };
  const preview = async () => {
    out.textContent = "Rendering…";
    try { out.textContent = (await post("/api/render", input.value)).yaml; }
    catch (e) { out.replaceChildren(el("div", { class: "error", id: "preview-error" }, e.message)); }
  };
  const rows = (doc.items || []).map((rt) => {
    const md = rt.metadata || {}, pol = (rt.spec || {}).mlPolicy || {};
    const fw = ["torch", "mpi", "jax", "xgboost", "flux"].find((k) => pol[k]) || "plain";
    return el("tr", {}, el("td", {}, el("a", { href: "#/runtimes", onclick: (e) => { e.preventDefault(); show(md.name, rt.kind); } }, md.name)),
      el("td", {}, rt.kind), el("td", {}, (md.labels || {})["trainer.kubeflow.org/framework"] || "-"), el("td", {}, fw),
      el("td", {}, pol.numNodes !== undefined ? String(pol.numNodes) : "-"));
  });
  main(el("h1", {}, "Runtimes"), doc.problems ? el("div", { class: "error" }, doc.problems) : null,
    table(["Name", "Kind", "Framework", "ML policy", "Nodes"], rows, "runtimes"),
    el("div", { class: "split" },
      el("div", {}, el("h2", {}, "Runtime"), yaml),
      el("div", {}, el("h2", {}, "Preview: what a TrainJob becomes"), input,
        el("div", { class: "toolbar" }, el("button", { id: "preview-run", onclick: preview }, "Preview")), out)));
  if (doc.items && doc.items.length) show(doc.items[0].metadata.name);
}

// ---- hyperparameter searches ------------------------------------------------------

function optimizationsPage() {
  const body = el("tbody");
  main(el("h1", {}, "Hyperparameter searches"),
    el("table", { id: "optimizations" }, el("thead", {}, el("tr", {},
      ["Name", "Status", "Trials", "Running", "Succeeded", "Failed", "Best", "Objective", "Age"].map((h) => el("th", {}, h)))), body));
  watch("/api/watch/optimizations", (doc) => {
    const rows = (doc.items || []).map((r) => el("tr", { "data-optimization": r.name },
      el("td", {}, el("a", { href: "#/optimization/" + enc(r.namespace) + "/" + enc(r.name) }, r.name),
        r.namespace !== "default" ? el("div", { class: "muted" }, r.namespace) : null),
      el("td", {}, statusBadge(r.status)), el("td", {}, r.trials + "/" + r.numTrials),
      el("td", {}, String(r.running)), el("td", {}, String(r.succeeded)), el("td", {}, String(r.failed)),
      el("td", {}, r.best ? el("a", { href: "#/job/" + enc(r.namespace) + "/" + enc(r.best) }, r.best) : "-"),
      el("td", {}, r.value !== undefined ? r.objective + " = " + r.value : "-"),
      el("td", { title: r.created || "" }, age(r.created))));
    if (!rows.length)
      rows.push(el("tr", {}, el("td", { colspan: 9, class: "muted" }, doc.cluster
        ? "Searches are shown for the local engine (on a cluster: kubectl get optimizationjobs)."
        : "No searches yet: kftrainer optimize -f search.yaml, or kftrainer.OptimizerClient().optimize(...)")));
    body.replaceChildren(...rows);
  });
}

const PALETTE = ["#2f6fde", "#d9822b", "#1f8a4c", "#c73b3b", "#7b5bd6", "#0f8b8d", "#b7791f", "#d6457c", "#4f5d75", "#6aa84f"];

// The value a trial is compared by (min when minimizing, max when maximizing, else latest),
// as kftrainer get and the engine compare it.
function objectiveOf(trial, doc) {
  const m = (trial.metrics || []).find((x) => x.name === doc.objective);
  if (!m) return undefined;
  let v = doc.maximize ? m.max : m.min;
  if (v === "unavailable") v = m.latest;
  const f = parseFloat(v);
  return Number.isFinite(f) ? f : undefined;
}

function trialsTable(doc) {
  const opt = doc.optimizationjob, st = opt.status || {}, ns = opt.metadata.namespace;
  const best = (st.result || {}).trainJobName;
  const metrics = [doc.objective, ...new Set((st.trials || []).flatMap((t) => (t.metrics || []).map((m) => m.name))
    .filter((n) => n !== doc.objective))];
  const head = ["Trial", "State", ...doc.parameters.map((p) => p.name), ...metrics, "Age"];
  const rows = (st.trials || []).map((t) => {
    const val = (name) => {
      if (name === doc.objective) { const v = objectiveOf(t, doc); return v === undefined ? "-" : String(v); }
      const m = (t.metrics || []).find((x) => x.name === name);
      return m ? m.latest : "-";
    };
    const params = Object.fromEntries((t.parameters || []).map((a) => [a.name, a.value]));
    return el("tr", { class: t.name === best ? "best" : "", "data-trial": t.name, title: t.message || "" },
      el("td", {}, t.state === "Pending" ? t.name : el("a", { href: "#/job/" + enc(ns) + "/" + enc(t.name) }, t.name)),
      el("td", {}, statusBadge(t.state)), ...doc.parameters.map((p) => el("td", {}, params[p.name] ?? "-")),
      ...metrics.map((n) => el("td", {}, val(n))), el("td", { title: t.creationTimestamp || "" }, age(t.creationTimestamp)));
  });
  return table(head, rows, "trials");
}

// One uPlot (or, without it, a table of the last values) in holder.
function plotInto(holder, opts, data, fallbackRows) {
  holder.querySelectorAll("canvas, .u-wrap, .u-legend, table").forEach((n) => n.remove());
  if (holder._plot) { holder._plot.destroy(); holder._plot = null; }
  if (state.charts && window.uPlot) {
    holder._plot = new window.uPlot(Object.assign({ width: Math.max(300, holder.clientWidth - 20), height: 240 }, opts), data, holder);
  } else {
    holder.append(table(fallbackRows[0], fallbackRows.slice(1).map((r) => el("tr", {}, r.map((c) => el("td", {}, String(c)))))));
  }
}

// Objective per trial over time: one line per trial, from the values each reported.
function drawObjectiveChart(holder, doc, byTrial) {
  const names = [...byTrial.keys()].filter((n) => byTrial.get(n).x.length);
  let points = 0;
  for (const n of names) points += byTrial.get(n).x.length;
  holder.setAttribute("data-series", String(names.length));
  holder.setAttribute("data-points", String(points));
  if (!names.length) { holder.querySelector(".muted") || holder.append(el("p", { class: "muted" }, "Nothing reported yet.")); return; }
  const nm = holder.querySelector("p.muted"); if (nm) nm.remove();
  const tables = names.map((n) => [byTrial.get(n).x, byTrial.get(n).y]);
  const data = window.uPlot ? window.uPlot.join(tables) : [];
  plotInto(holder, { scales: { x: { time: true } }, series: [{}, ...names.map((n, i) => ({ label: n, stroke: PALETTE[i % PALETTE.length], width: 2, spanGaps: true }))] },
    data, [["Trial", "Reports", "Last"], ...names.map((n) => [n, byTrial.get(n).y.length, byTrial.get(n).y[byTrial.get(n).y.length - 1]])]);
}

// Parameter against objective: a scatter per parameter, one point per trial.
function drawScatters(box, doc) {
  const trials = ((doc.optimizationjob.status || {}).trials || []).filter((t) => objectiveOf(t, doc) !== undefined);
  for (const p of doc.parameters) {
    let holder = box.querySelector('div.chart[data-parameter="' + CSS.escape(p.name) + '"]');
    if (!holder) { holder = el("div", { class: "chart", "data-parameter": p.name }, el("h3", {}, p.name + " vs " + doc.objective)); box.append(holder); }
    const pts = trials.map((t) => {
      const raw = ((t.parameters || []).find((a) => a.name === p.name) || {}).value;
      const x = p.kind === "categorical" ? (p.choices || []).indexOf(raw) : parseFloat(raw);
      return [x, objectiveOf(t, doc), raw, t.name];
    }).filter((q) => Number.isFinite(q[0]) && (p.kind !== "categorical" || q[0] >= 0)).sort((a, b) => a[0] - b[0]);
    holder.setAttribute("data-points", String(pts.length));
    const xScale = p.kind === "logUniform" ? { distr: 3 } : p.kind === "categorical" ? { auto: false, range: [-0.5, (p.choices || []).length - 0.5] } : {};
    // choices by name; a log axis labelled at its powers of ten only
    const axes = p.kind === "categorical" ? [{ values: (u, ticks) => ticks.map((v) => Number.isInteger(v) ? (p.choices || [])[v] ?? "" : "") }, {}]
      : p.kind === "logUniform" ? [{ values: (u, ticks) => ticks.map((v) => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? String(+v.toPrecision(1)) : "") }, {}]
      : undefined;
    plotInto(holder, { scales: { x: Object.assign({ time: false }, xScale) }, axes,
      series: [{ label: p.name }, { label: doc.objective, stroke: PALETTE[0], paths: () => null, points: { show: true, size: 8, fill: PALETTE[0] } }] },
      [pts.map((q) => q[0]), pts.map((q) => q[1])], [[p.name, doc.objective, "Trial"], ...pts.map((q) => [q[2], q[1], q[3]])]);
  }
}

function optimizationPage(ns, name) {
  const cards = el("div", { class: "grid", id: "opt-cards" });
  const actions = el("div", { class: "toolbar", id: "actions" },
    el("button", { id: "act-delete", class: "danger", onclick: async () => {
      if (!(await confirmDialog("Delete search " + name + "? Its running trials are stopped and every trial TrainJob is removed."))) return;
      try { await post("/api/optimizations/" + enc(ns) + "/" + enc(name) + "/delete"); location.hash = "#/optimizations"; }
      catch (e) { document.getElementById("act-msg").textContent = "Delete failed: " + e.message; }
    } }, "Delete"), el("span", { id: "act-msg", class: "muted" }));
  const trialsBox = el("div", { id: "trials-box" });
  const objective = el("div", { class: "chart", id: "objective-chart" }, el("h3", { id: "objective-title" }, "Objective per trial over time"));
  const scatter = el("div", { class: "charts", id: "scatter" });
  const rest = el("div", { id: "opt-rest" });
  main(el("h1", { id: "opt-name" }, name), cards, actions,
    !state.charts || !window.uPlot ? el("div", { class: "notice", id: "no-charts" },
      "Charts are unavailable: this kftrainer was built without uPlot (scripts/install-deps.sh fetches it). The values are shown as numbers.") : null,
    el("h2", {}, "Trials"), trialsBox, el("h2", {}, "Objective per trial over time"), objective,
    el("h2", {}, "Parameters against the objective"), scatter, rest);
  const base = "/api/optimizations/" + enc(ns) + "/" + enc(name);
  const byTrial = new Map();
  let last = 0, loading = false, doc = null;
  const load = async () => {
    if (loading || !doc) return;
    loading = true;
    try {
      const obs = await api(base + "/observations?after=" + last);
      for (const o of obs.items) {
        last = Math.max(last, o.id);
        if (o.metric !== doc.objective) continue;
        const v = parseFloat(o.value);
        if (!Number.isFinite(v)) continue;
        if (!byTrial.has(o.trial)) byTrial.set(o.trial, { x: [], y: [] });
        const s = byTrial.get(o.trial);
        // several values in one second: spread them so every one is a point
        let t = Date.parse(o.recorded) / 1000;
        if (s.x.length && t <= s.x[s.x.length - 1]) t = s.x[s.x.length - 1] + 0.001;
        s.x.push(t); s.y.push(v);
      }
      drawObjectiveChart(objective, doc, byTrial);
    } catch (e) { /* the search went away */ }
    loading = false;
  };
  watch("/api/watch/optimizations/" + enc(ns) + "/" + enc(name), (d) => {
    if (d.error) { cards.replaceChildren(el("div", { class: "error", id: "opt-error" }, d.error)); if (d.gone) leave(); return; }
    doc = d;
    const r = d.row, card = (k, v, id) => el("div", { class: "card" }, el("div", { class: "k" }, k), el("div", { class: "v", id }, v));
    const alg = (((d.optimizationjob.metadata || {}).annotations || {})["optimizer.kftrainer.dev/algorithm"]) ||
      (((d.optimizationjob.spec || {}).searchAlgorithm || {}).grid ? "grid" : "random");
    cards.replaceChildren(card("Status", statusBadge(r.status), "opt-status"), card("Algorithm", alg),
      card("Trials", r.trials + "/" + r.numTrials, "opt-trials"), card("Running", String(r.running)),
      card("Succeeded", String(r.succeeded)), card("Failed", String(r.failed)),
      card("Best trial", r.best || "-", "opt-best"),
      card((d.maximize ? "Max " : "Min ") + d.objective, r.value ?? "-", "opt-value"), card("Age", age(r.created)));
    document.getElementById("act-delete").disabled = r.status === "Terminating";
    trialsBox.replaceChildren(trialsTable(d));
    document.getElementById("objective-title").textContent = d.objective + " per trial over time";
    drawScatters(scatter, d);
    const conds = ((d.optimizationjob.status || {}).conditions || []).map((c) => el("tr", {},
      el("td", {}, c.type), el("td", {}, c.status), el("td", {}, c.reason || ""), el("td", {}, c.message || ""),
      el("td", { title: c.lastTransitionTime || "" }, age(c.lastTransitionTime))));
    const events = (d.events || []).map((e) => el("tr", {}, el("td", {}, e.type || ""), el("td", {}, e.reason || ""),
      el("td", {}, e.message || ""), el("td", {}, age(e.lastTimestamp || e.eventTime))));
    rest.replaceChildren(el("h2", {}, "Conditions"), table(["Type", "Status", "Reason", "Message", "Age"], conds, "opt-conditions"),
      el("h2", {}, "Events"), table(["Type", "Reason", "Message", "Age"], events, "opt-events"));
    load();
  });
}

// ---- routing ---------------------------------------------------------------------

function route() {
  leave();
  const h = location.hash.replace(/^#/, "").split("?")[0];
  const parts = h.split("/").filter(Boolean).map(decodeURIComponent);
  const searches = parts[0] === "optimizations" || parts[0] === "optimization";
  document.getElementById("nav-jobs").classList.toggle("active", parts[0] !== "runtimes" && !searches);
  document.getElementById("nav-optimizations").classList.toggle("active", searches);
  document.getElementById("nav-runtimes").classList.toggle("active", parts[0] === "runtimes");
  if (parts[0] === "job" && parts.length >= 3) jobPage(parts[1], parts[2], parts[3] || "");
  else if (parts[0] === "optimization" && parts.length >= 3) optimizationPage(parts[1], parts[2]);
  else if (parts[0] === "optimizations") optimizationsPage();
  else if (parts[0] === "runtimes") runtimesPage();
  else jobsPage();
}

async function start() {
  try {
    const s = await api("/api/session");
    state.csrf = s.csrf;
    state.charts = s.charts;
    state.cluster = s.mode === "cluster";
    // Which jobs these are: the local engine's, or a cluster's namespace(s).
    document.getElementById("scope").textContent = state.cluster
      ? "cluster · " + (s.namespace ? "namespace " + s.namespace : "all namespaces") : "local engine";
  } catch (e) {
    main(el("div", { class: "error" }, "Cannot reach the server: " + e.message));
    return;
  }
  if (state.charts) {
    document.head.append(el("link", { rel: "stylesheet", href: "/uPlot.min.css" }));
    await new Promise((resolve) => {
      const s = el("script", { src: "/uPlot.min.js" });
      s.onload = resolve; s.onerror = () => { state.charts = false; resolve(); };
      document.head.append(s);
    });
  }
  window.addEventListener("hashchange", route);
  route();
}

start();
