/**
 * The dashboard: one self-contained page (no CDN; uPlot's script and CSS are inlined by
 * dashboard.ts). It asks for the token once (kept in sessionStorage), polls GET /v1/stats
 * every second and keeps the last HISTORY_POINTS seconds in the browser: the server keeps
 * cumulative counts only, so an open dashboard costs it one small JSON answer a second.
 */
const PAGE_SCRIPT = String.raw`
"use strict";
const HISTORY_POINTS = 300;
const $ = (id) => document.getElementById(id);
const state = { token: sessionStorage.getItem("spillway-token") || "", times: [], series: new Map(), last: null, chart: null, seriesKey: "", timer: 0 };
window.spillwayDashboard = state;

function palette(i, denied) {
  const hue = (i * 67 + (denied ? 0 : 140)) % 360;
  return "hsl(" + hue + (denied ? ", 75%, 50%)" : ", 55%, 42%)");
}

function buildChart(names) {
  if (state.chart) state.chart.destroy();
  const series = [{}];
  names.forEach((name, i) => {
    series.push({ label: name + " allowed/s", stroke: palette(i, false), width: 2 });
    series.push({ label: name + " denied/s", stroke: palette(i, true), width: 2, dash: [6, 3] });
  });
  const width = Math.max(320, $("chart").clientWidth);
  state.chart = new uPlot({ width, height: 280, series, axes: [{}, { label: "decisions / s" }], scales: { x: { time: true } } }, chartData(names), $("chart"));
}

function chartData(names) {
  const data = [state.times];
  for (const name of names) {
    const s = state.series.get(name);
    data.push(s.allowed, s.denied);
  }
  return data;
}

function record(stats) {
  const names = Object.keys(stats.policies).sort();
  const last = state.last;
  state.last = stats;
  if (!last) return names;
  const seconds = Math.max(0.001, (stats.nowMs - last.nowMs) / 1000);
  state.times.push(stats.nowMs / 1000);
  for (const name of names) {
    if (!state.series.has(name)) state.series.set(name, { allowed: state.times.slice(0, -1).map(() => 0), denied: state.times.slice(0, -1).map(() => 0) });
    const now = stats.policies[name], before = last.policies[name] || { allowed: 0, denied: 0, failed_open: 0 };
    const s = state.series.get(name);
    s.allowed.push((now.allowed + now.failed_open - before.allowed - (before.failed_open || 0)) / seconds);
    s.denied.push((now.denied - before.denied) / seconds);
  }
  if (state.times.length > HISTORY_POINTS) {
    state.times.shift();
    for (const s of state.series.values()) { s.allowed.shift(); s.denied.shift(); }
  }
  return names;
}

function text(id, value) { $(id).textContent = value; }
function ms(value) { return value === null ? "–" : value < 1 ? (value * 1000).toFixed(0) + " µs" : value.toFixed(2) + " ms"; }

function render(stats, names) {
  const store = stats.store;
  text("store", store.store + (store.ok ? " · up" : " · DOWN" + (store.detail ? " (" + store.detail + ")" : "")));
  $("store").className = store.ok ? "ok" : "down";
  text("p50", ms(stats.latencyMs.p50));
  text("p99", ms(stats.latencyMs.p99));
  text("failed-open", String(stats.failedOpen));
  text("store-errors", stats.storeErrors.unavailable + " unavailable · " + stats.storeErrors.fault + " fault");
  const rows = stats.top.map((row) => {
    const tr = document.createElement("tr");
    for (const cell of [row.key, row.policy, String(row.denials), new Date(row.lastSeen).toLocaleTimeString()]) {
      const td = document.createElement("td");
      td.textContent = cell;
      tr.appendChild(td);
    }
    return tr;
  });
  $("top-body").replaceChildren(...rows);
  $("top-empty").hidden = rows.length > 0;
  if (state.times.length === 0) return;
  const key = names.join("\u0000");
  if (key !== state.seriesKey) { state.seriesKey = key; buildChart(names); }
  else state.chart.setData(chartData(names));
}

async function poll() {
  try {
    const response = await fetch("/v1/stats", { headers: { authorization: "Bearer " + state.token }, cache: "no-store" });
    if (response.status === 401) { stop("Wrong token: enter the SPILLWAY_TOKEN of this server."); return; }
    if (!response.ok) { text("status", "Spillway answered " + response.status); return; }
    const stats = await response.json();
    render(stats, record(stats));
    text("status", "Live · updated " + new Date(stats.nowMs).toLocaleTimeString());
  } catch (error) {
    text("status", "Cannot reach Spillway: " + error.message);
  }
}

function stop(message) {
  clearInterval(state.timer);
  sessionStorage.removeItem("spillway-token");
  $("login").hidden = false;
  text("status", message);
}

function start() {
  $("login").hidden = true;
  clearInterval(state.timer);
  poll();
  state.timer = setInterval(poll, 1000);
}

$("login").addEventListener("submit", (event) => {
  event.preventDefault();
  state.token = $("token").value.trim();
  sessionStorage.setItem("spillway-token", state.token);
  start();
});
window.addEventListener("resize", () => { if (state.chart) state.chart.setSize({ width: Math.max(320, $("chart").clientWidth), height: 280 }); });
if (state.token) start();
`;

const PAGE_STYLE = `
[hidden] { display: none !important; }
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f5f6f8; }
header { display: flex; gap: 16px; align-items: center; padding: 12px 20px; background: #1d2330; color: #fff; }
header h1 { font-size: 18px; margin: 0; }
#status { opacity: .8; font-size: 13px; }
main { padding: 16px 20px; display: grid; gap: 16px; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 12px; }
.card, section { background: #fff; border-radius: 8px; padding: 12px 16px; box-shadow: 0 1px 2px #0002; }
.card b { display: block; font-size: 12px; font-weight: 500; color: #5b6475; text-transform: uppercase; }
.card span { font-size: 20px; font-weight: 600; }
.ok { color: #1a7f37; } .down { color: #cf222e; }
h2 { font-size: 15px; margin: 0 0 8px; }
table { border-collapse: collapse; width: 100%; }
td, th { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e5e7eb; font-variant-numeric: tabular-nums; }
form { display: flex; gap: 8px; margin-left: auto; }
input { padding: 4px 8px; }
`;

const PAGE_BODY = `
<header><h1>Spillway</h1><span id="status">Enter the token to connect.</span>
<form id="login"><input id="token" type="password" placeholder="SPILLWAY_TOKEN" autocomplete="current-password" aria-label="token"><button>Connect</button></form></header>
<main>
<div class="cards">
<div class="card"><b>Store</b><span id="store">–</span></div>
<div class="card"><b>Store latency p50</b><span id="p50">–</span></div>
<div class="card"><b>Store latency p99</b><span id="p99">–</span></div>
<div class="card"><b>Failed open</b><span id="failed-open">–</span></div>
<div class="card"><b>Store errors</b><span id="store-errors">–</span></div>
</div>
<section><h2>Decisions per second, per policy</h2><div id="chart"></div></section>
<section><h2>Most limited keys (this process)</h2>
<table><thead><tr><th>Key</th><th>Policy</th><th>Denials</th><th>Last seen</th></tr></thead><tbody id="top-body"></tbody></table>
<p id="top-empty">No denials yet.</p></section>
</main>`;

/** The page with uPlot's script and CSS inlined (`</` escaped so neither can end its tag). */
export function dashboardPage(uplotScript: string, uplotCss: string): string {
  const inline = (code: string) => code.replace(/<\//g, "<\\/");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Spillway dashboard</title>
<style>${uplotCss}${PAGE_STYLE}</style>
</head><body>${PAGE_BODY}
<script>${inline(uplotScript)}</script>
<script>${inline(PAGE_SCRIPT)}</script>
</body></html>`;
}
