// The class dashboard (minislurm.ctld.dashboard): every second, ask the controller for its view
// of the cluster (GET /api/v1/dashboard/view, with the user's token) and draw it.  Plain JavaScript
// and SVG, nothing fetched from anywhere else.  window.dashboardStats counts the drawings and
// says how long the last took (the tests wait on it).
"use strict";

const POLL_MS = 1000;
const SPANS = [10, 30, 60, 120, 240, 480, 1440].map((m) => m * 60); // Gantt widths to choose from, seconds
const stats = (window.dashboardStats = { renders: 0, build_ms: null, render_ms: null, error: null });
const token = takeToken();
const $ = (id) => document.getElementById(id);
const drawn = new Map(); // element -> the HTML last put in it: what has not changed is not drawn again

// The link `minislurm dashboard` prints carries the token after "#": keep it for this tab and
// take it out of the address bar.
function takeToken() {
  const fromLink = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromLink) {
    sessionStorage.setItem("minislurm-token", fromLink);
    history.replaceState(null, "", location.pathname);
  }
  return fromLink || sessionStorage.getItem("minislurm-token");
}

async function refresh() {
  if (!token) return problem("No token: open the link that `minislurm dashboard` prints.");
  let reply;
  try {
    reply = await fetch("/api/v1/dashboard/view", { headers: { Authorization: `Bearer ${token}` }, cache: "no-store" });
  } catch (e) {
    problem(`The controller does not answer (${e.message}); trying again.`);
    return setTimeout(refresh, POLL_MS);
  }
  if (reply.status === 401 || reply.status === 403) {
    const body = await reply.json();
    return problem(`${body.error}. Run \`minislurm dashboard\` for a new link.`);
  }
  if (!reply.ok) {
    problem(`The controller answered ${reply.status}; trying again.`);
    return setTimeout(refresh, POLL_MS);
  }
  const view = await reply.json();
  const began = performance.now();
  draw(view);
  void document.body.offsetHeight; // lay the page out now, so the time below includes it
  const took = performance.now() - began;
  Object.assign(stats, { renders: stats.renders + 1, build_ms: view.build_ms, render_ms: took, error: null });
  $("status").className = "";
  $("status").textContent = `updated ${clock(view.now)}`;
  $("timing").textContent = `view built by the controller in ${view.build_ms} ms, drawn in ${took.toFixed(1)} ms`;
  setTimeout(refresh, POLL_MS);
}

function problem(text) {
  stats.error = text;
  $("status").className = "problem";
  $("status").textContent = text;
}

function draw(view) {
  $("cluster").textContent = view.cluster;
  drawSummary(view);
  drawGrid(view);
  drawGantt(view);
  drawQueue(view);
  drawShares(view);
  drawEvents(view);
}

// -- helpers ------------------------------------------------------------------------------------
function put(element, html) {
  if (drawn.get(element) !== html) {
    element.innerHTML = html;
    drawn.set(element, html);
  }
}

const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const clock = (t) => new Date(t * 1000).toLocaleTimeString([], { hour12: false });

function colour(user) { // one colour per user, the same on every refresh and in every chart
  let h = 0;
  for (const c of user) h = (h * 31 + c.charCodeAt(0)) % 360;
  return `hsl(${h}, 62%, 52%)`;
}

const jobs = (n) => `${n} job${n === 1 ? "" : "s"}`;

function fromNow(t, now) {
  if (t == null) return "";
  const s = Math.round(t - now);
  if (s <= 0) return `now (${clock(t)})`;
  return s < 3600 ? `in ${Math.ceil(s / 60)} min (${clock(t)})` : `in ${(s / 3600).toFixed(1)} h (${clock(t)})`;
}

// What a GPU square shows: the job holding it, else what its node's state says about it.
function gpuState(node) {
  if (["down", "fail"].includes(node.state) || node.not_responding) return "down";
  if (["drain", "drng"].includes(node.state)) return "drained";
  if (["resv", "maint"].includes(node.state)) return "reserved";
  return "idle";
}

// -- the parts of the page ----------------------------------------------------------------------
function drawSummary(view) {
  const gpus = view.nodes.flatMap((n) => n.gpus.map((job) => (job == null ? gpuState(n) : "alloc")));
  const count = (s) => gpus.filter((g) => g === s).length;
  $("summary").textContent = `${view.nodes.length} nodes, ${gpus.length} GPUs: ${count("alloc")} allocated, ` +
    `${count("idle")} idle, ${count("down") + count("drained")} down or drained. ` +
    `${jobs(Object.keys(view.running).length)} running, ${view.queue.pending} pending.`;
}

function drawGrid(view) {
  const users = new Set();
  put($("grid"), view.nodes.map((node) => {
    const idle = gpuState(node);
    const cells = node.gpus.map((jobId, g) => {
      const job = view.running[jobId];
      if (!job) return `<i class="gpu ${idle}" data-gpu="${g}" data-state="${idle}" data-tip="${esc(node.name)} GPU ${g}: ${idle}"></i>`;
      users.add(job.user);
      return `<i class="gpu alloc" data-gpu="${g}" data-state="alloc" data-job="${jobId}" data-user="${esc(job.user)}"` +
        ` style="background:${colour(job.user)}" data-tip="${esc(node.name)} GPU ${g}: job ${esc(job.id)} (${esc(job.name)}) of ${esc(job.user)}"></i>`;
    }).join("");
    const star = node.not_responding ? "*" : "";
    const why = node.reason ? `: ${node.reason}` : "";
    return `<div class="node ${esc(node.state)}" data-node="${esc(node.name)}" data-state="${esc(node.state + star)}"` +
      ` data-tip="${esc(node.name)} ${esc(node.state + star)}${esc(why)}"><span class="name">${esc(node.name)} ${esc(node.state + star)}</span>` +
      `<span class="gpus">${cells}</span></div>`;
  }).join(""));
  const key = [["idle", "idle"], ["down", "down"], ["drained", "drained or draining"], ["reserved", "reserved"]]
    .map(([cls, text]) => `<span><i class="gpu ${cls}"></i>${text}</span>`);
  const owners = [...users].sort().map((u) => `<span><i class="gpu" style="background:${colour(u)}"></i>${esc(u)}</span>`);
  put($("legend"), key.concat(owners).join(""));
}

// Rows are nodes, time runs left to right from now.  A job is one outline over its nodes: solid
// while it runs (to its time limit), pale with a dashed edge where the plan promises it a start.
function drawGantt(view) {
  const svg = $("gantt"), now = view.now, nodes = view.nodes;
  const bars = [];
  for (const [id, job] of Object.entries(view.running)) bars.push({ kind: "running", job_id: id, ...job });
  for (const p of view.plan.promises) bars.push({ kind: "promise", ...p });
  const ends = bars.concat(view.plan.reservations).map((b) => b.end ?? b.start).filter((t) => t > now);
  const span = SPANS.find((s) => s >= Math.max(0, ...ends) - now) ?? SPANS[SPANS.length - 1];
  const width = svg.clientWidth || 900, left = 70, top = 16;
  const row = Math.max(3, Math.min(16, Math.floor(480 / nodes.length)));
  const height = top + row * nodes.length + 4;
  const x = (t) => left + Math.max(0, Math.min(1, (t - now) / span)) * (width - left - 4);
  const parts = [];
  for (let i = 0; i <= 6; i++) {
    const t = now + (span * i) / 6, at = x(t);
    parts.push(`<line class="tick" x1="${at}" x2="${at}" y1="${top}" y2="${height}"/>`,
      `<text x="${at}" y="11" text-anchor="${i ? (i === 6 ? "end" : "middle") : "start"}">${i ? clock(t) : "now"}</text>`);
  }
  if (row >= 9) nodes.forEach((n, i) => parts.push(`<text x="0" y="${top + row * i + row - 2}">${esc(n.name)}</text>`));
  // An outline is a box per run of neighbouring nodes, from x0 to x1.
  const outline = (x0, x1, nodeList, pad) => runs(nodeList).map(([a, b]) =>
    `M${x0},${top + row * a + pad}H${Math.max(x0 + 1, x1)}V${top + row * (b + 1) - pad}H${x0}Z`).join("");
  for (const r of view.plan.reservations) {
    parts.push(`<path class="reservation" data-resv="${esc(r.name)}" data-tip="reservation ${esc(r.name)}"` +
      ` d="${outline(x(r.start), x(r.end ?? now + span), r.nodes, 0)}"/>`);
  }
  for (const bar of bars) {
    const x0 = x(bar.start), x1 = x(bar.end ?? now + span);
    const tip = `job ${esc(bar.id)} (${esc(bar.name)}) of ${esc(bar.user)}, ` +
      `${bar.kind === "promise" ? "promised a start at " + clock(bar.start) : "running"}, until ${bar.end ? clock(bar.end) : "no limit"}`;
    parts.push(`<path class="${bar.kind}" data-job="${bar.job_id}" data-tip="${tip}" fill="${colour(bar.user)}"` +
      ` stroke="${colour(bar.user)}" d="${outline(x0, x1, bar.nodes, 1)}"/>`);
    const [a, b] = runs(bar.nodes)[0];
    if (row * (b - a + 1) >= 11 && x1 - x0 > 30) parts.push(`<text x="${x0 + 3}" y="${top + row * a + 11}">${esc(bar.id)}</text>`);
  }
  parts.push(`<line class="now" x1="${left}" x2="${left}" y1="${top - 4}" y2="${height}"/>`);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("height", height);
  put(svg, parts.join(""));
}

function runs(indices) { // [3, 4, 5, 9] -> [[3, 5], [9, 9]]: one box per run of neighbours
  const out = [];
  for (const i of [...indices].sort((a, b) => a - b)) {
    if (out.length && out[out.length - 1][1] === i - 1) out[out.length - 1][1] = i;
    else out.push([i, i]);
  }
  return out;
}

// What the pointer is on (a GPU, a node, a bar, a reason), in the line at the bottom: thousands
// of title attributes, one per square, would cost more to draw than the squares themselves.
function showTip(event) {
  const on = event.target.closest("[data-tip]");
  if (on) $("tip").textContent = on.dataset.tip;
}

function drawQueue(view) {
  const q = view.queue;
  const reasons = Object.entries(q.reasons).sort((a, b) => b[1] - a[1]).map(([r, n]) => `${n} ${r}`).join(", ");
  $("queue-count").textContent = (q.jobs.length < q.pending ? `the first ${q.jobs.length} of ${q.pending} pending`
    : `${q.pending} pending`) + (reasons ? `: ${reasons}` : "");
  put(document.querySelector("#queue tbody"), q.jobs.map((j) =>
    `<tr data-job="${j.job_id}"><td>${esc(j.id)}</td><td>${esc(j.user)}</td><td>${esc(j.account)}</td>` +
    `<td>${esc(j.name)}</td><td>${j.nodes}</td><td>${j.gpus}</td><td>${j.priority}</td>` +
    `<td class="reason" data-tip="${esc(j.reason)}: ${esc(j.meaning)}">${esc(j.reason)}</td>` +
    `<td class="start" data-start="${j.expected_start ?? ""}">${fromNow(j.expected_start, view.now)}</td>` +
    `<td>${esc(j.planned_nodes)}</td></tr>`).join(""));
}

function drawShares(view) {
  const pct = (x) => `${(100 * (x || 0)).toFixed(1)}%`;
  put($("shares"), view.shares.length ? `<div class="share"><b>account</b><b>shares / usage</b><b>LevelFS</b>` +
    view.shares.map((s) => `<span data-account="${esc(s.account)}" data-norm-shares="${s.norm_shares}">${esc(s.account)}</span>` +
      `<span><div class="bar" style="width:${pct(s.norm_shares)}" data-tip="${esc(s.account)}: normalised shares ${pct(s.norm_shares)}"></div>` +
      `<div class="bar usage" style="width:${pct(s.effective_usage)}" data-tip="${esc(s.account)}: effective usage ${pct(s.effective_usage)}"></div></span>` +
      `<span>${s.level_fs == null ? "" : s.level_fs === "inf" ? "inf" : Number(s.level_fs).toFixed(3)}</span>`).join("") + "</div>"
    : "no fair-share tree (PriorityType is not priority/multifactor)");
}

function drawEvents(view) {
  put($("events"), view.events.map((e) => {
    const what = e.kind === "node"
      ? `node ${esc(e.node)} ${esc(e.state)}: ${esc(e.text)}${e.by ? ` (${esc(e.by)})` : ""}`
      : `job ${esc(e.job)} (${esc(e.text)}, ${esc(e.by)}) ${e.state === "NODE_FAIL" ? "lost with node" : "requeued from"} ${esc(e.node)}`;
    return `<li data-kind="${e.kind}" data-state="${esc(e.state)}"><time>${e.time ? clock(e.time) : ""}</time>${what}</li>`;
  }).join("") || "<li>nothing yet</li>");
}

document.addEventListener("mouseover", showTip);
refresh();
