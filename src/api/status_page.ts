/**
 * The status page on `--metrics-address`: `GET /status` (every HPA, failing first, filtered by
 * `?namespace=` and `?state=`), `GET /status/<namespace>/<name>` (one HPA with a plot per
 * metric, the next 24 hours of its ScalingSchedules, the replica guard's and the fallback's last
 * decisions) and `GET /status.json` (status_model.ts' document). Server-rendered HTML with
 * inline SVG and CSS: no script, no external resource (it works in an air-gapped cluster); it
 * reloads itself unless `?refresh=0` (a link on each page turns that on and off). Every string
 * that comes from the cluster goes through {@linkcode escapeHtml}.
 *
 * @module
 */
import type { Hono } from "hono";
import { parseQuantity } from "../core/kubernetes/quantity.ts";
import {
  annotationConfig,
  delegatedText,
  fallbackText,
  filterStatus,
  findSchedule,
  guardCapText,
  guardOutcomeText,
  type HpaState,
  type HpaStatus,
  type MetricStatus,
  type PrometheusAdapterStatus,
  type ReplicaGuardStatus,
  type ScaledObjectStatus,
  scheduleChangeTexts,
  scheduleLabel,
  type ScheduleStatus,
  selectorText,
  STATES,
  type StatusPoint,
  type StatusReport,
} from "./status_model.ts";

/** Options of {@linkcode renderOverview} and {@linkcode renderHpaPage}. */
export interface StatusPageOptions {
  /** Seconds between reloads (`<meta http-equiv="refresh">`). Default 10. */
  refreshSeconds?: number;
  /** Whether the page reloads itself (`?refresh=0` turns it off). Default true. */
  refresh?: boolean;
}

/** Errors longer than this are cut in the overview, the full text one click away. */
export const OVERVIEW_ERROR_CHARS = 120;

/**
 * Text as HTML (element content and quoted attribute values).
 *
 * @example
 * ```ts
 * escapeHtml(`<script>alert("x")</script>`); // "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
 * ```
 */
export function escapeHtml(text: string): string {
  return text.replace(
    /[&<>"']/g,
    (c) =>
      c === "&"
        ? "&amp;"
        : c === "<"
        ? "&lt;"
        : c === ">"
        ? "&gt;"
        : c === '"'
        ? "&quot;"
        : "&#39;",
  );
}

const esc = escapeHtml;

/** A value as shown: at most three decimals. */
export function formatValue(v: number): string {
  return String(Math.round(v * 1000) / 1000);
}

/** Seconds as `45s`, `3m20s`, `2h5m`. */
export function formatAge(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** The words for a state (`failing` adds the count and since when). */
export function stateLabel(state: HpaState, m?: MetricStatus): string {
  switch (state) {
    case "invalid":
      return "cannot be collected";
    case "failing":
      return m && m.failures > 0
        ? `failing ${m.failures} time${m.failures === 1 ? "" : "s"} since ${m.failingSince ?? "?"}`
        : "failing";
    case "conflict":
      return "conflict with another HPA";
    case "expired":
      return "expired";
    case "fallback":
      return "fallback active";
    case "pending":
      return "not collected yet";
    case "collected":
      return "collected";
    case "hidden":
      return "hidden formula input";
    case "delegated":
      return delegatedText(m?.delegate);
    case "none":
      return "no metric of this adapter";
  }
}

/** The target's number (value or averageValue), or null. */
function targetValue(m: MetricStatus): number | null {
  const q = m.target.averageValue ?? m.target.value;
  if (q === undefined) return null;
  try {
    return parseQuantity(q);
  } catch {
    return null;
  }
}

function targetText(m: MetricStatus): string {
  const t = m.target;
  if (t.averageValue !== undefined) return `averageValue ${t.averageValue}`;
  if (t.value !== undefined) return `value ${t.value}`;
  if (t.averageUtilization !== undefined) return `averageUtilization ${t.averageUtilization}%`;
  return "none";
}

interface Scaled {
  x: (at: number) => number;
  y: (v: number) => number;
  lo: number;
  hi: number;
}

function scale(
  points: readonly StatusPoint[],
  extra: number | null,
  box: { left: number; top: number; width: number; height: number },
): Scaled {
  const times = points.map((p) => Date.parse(p.at));
  const t0 = Math.min(...times);
  const t1 = Math.max(...times);
  const values = points.flatMap((p) => p.value === null ? [] : [p.value]);
  if (extra !== null) values.push(extra);
  let lo = values.length > 0 ? Math.min(0, ...values) : 0;
  let hi = values.length > 0 ? Math.max(...values) : 1;
  if (hi === lo) {
    hi = lo + 1;
  }
  if (lo > 0) lo = 0;
  const r = (n: number): number => Math.round(n * 10) / 10;
  return {
    x: (at) => r(box.left + (t1 === t0 ? box.width : (at - t0) / (t1 - t0) * box.width)),
    y: (v) => r(box.top + box.height - (v - lo) / (hi - lo) * box.height),
    lo,
    hi,
  };
}

/**
 * A small inline SVG of the recent values (a line) and failures (red ticks at the bottom).
 * Empty history: an empty box.
 */
export function sparkline(points: readonly StatusPoint[], width = 120, height = 24): string {
  const open =
    `<svg class="spark" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">`;
  if (points.length === 0) return `${open}</svg>`;
  const s = scale(points, null, { left: 1, top: 2, width: width - 2, height: height - 4 });
  const line = points.flatMap((p) =>
    p.value === null ? [] : [`${s.x(Date.parse(p.at))},${s.y(p.value)}`]
  );
  const fails = points.filter((p) => "failed" in p).map((p) => {
    const x = s.x(Date.parse(p.at));
    return `<line class="fail" x1="${x}" y1="${height - 6}" x2="${x}" y2="${height}"/>`;
  });
  const path = line.length > 0 ? `<polyline points="${line.join(" ")}"/>` : "";
  return `${open}${path}${fails.join("")}</svg>`;
}

/**
 * A time plot of one metric's kept values: a line with a circle per value, a dashed target
 * line, a red cross per failure, the value range and the time span.
 */
export function metricPlot(m: MetricStatus, width = 640, height = 180): string {
  const open =
    `<svg class="plot" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">`;
  const points = m.history;
  if (points.length === 0) {
    return `${open}<text x="10" y="${height / 2}">no value kept yet</text></svg>`;
  }
  const target = targetValue(m);
  const box = { left: 60, top: 10, width: width - 80, height: height - 40 };
  const s = scale(points, target, box);
  const parts: string[] = [
    `<rect class="frame" x="${box.left}" y="${box.top}" width="${box.width}" height="${box.height}"/>`,
    `<text x="${box.left - 4}" y="${box.top + 4}" text-anchor="end">${formatValue(s.hi)}</text>`,
    `<text x="${box.left - 4}" y="${box.top + box.height}" text-anchor="end">${
      formatValue(s.lo)
    }</text>`,
  ];
  if (target !== null) {
    const y = s.y(target);
    parts.push(
      `<line class="target" x1="${box.left}" y1="${y}" x2="${box.left + box.width}" y2="${y}"/>`,
      `<text class="target" x="${box.left + box.width}" y="${y - 3}" text-anchor="end">target ${
        formatValue(target)
      }</text>`,
    );
  }
  const line = points.flatMap((p) =>
    p.value === null ? [] : [`${s.x(Date.parse(p.at))},${s.y(p.value)}`]
  );
  if (line.length > 0) parts.push(`<polyline points="${line.join(" ")}"/>`);
  for (const p of points) {
    const x = s.x(Date.parse(p.at));
    if (p.value !== null) {
      parts.push(
        `<circle cx="${x}" cy="${s.y(p.value)}" r="2.5"><title>${esc(p.at)}: ${
          formatValue(p.value)
        }</title></circle>`,
      );
    } else if ("failed" in p) {
      const y = box.top + box.height - 6;
      parts.push(
        `<path class="fail" d="M${x - 4},${y - 4}L${x + 4},${y + 4}M${x - 4},${y + 4}L${x + 4},${
          y - 4
        }"><title>${esc(p.at)}: failed</title></path>`,
      );
    }
  }
  const first = points[0].at;
  const last = points[points.length - 1].at;
  parts.push(
    `<text x="${box.left}" y="${height - 8}">${esc(first)}</text>`,
    `<text x="${box.left + box.width}" y="${height - 8}" text-anchor="end">${esc(last)}</text>`,
  );
  return `${open}${parts.join("")}</svg>`;
}

const CSS = `
body{font:14px/1.4 system-ui,sans-serif;margin:1.2em;color:#222}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4}
.state{font-weight:600;white-space:nowrap}
td.state-cell{max-width:30em;overflow-wrap:anywhere}
details.err summary{cursor:pointer}
.s-invalid,.s-failing,.s-conflict{color:#b00020}.s-expired,.s-fallback{color:#a05a00}
.s-pending,.s-none,.s-delegated{color:#666}.s-collected,.s-hidden{color:#17693a}
.err{color:#b00020}.warn{color:#a05a00}.muted{color:#666}
svg polyline{fill:none;stroke:#1f5fbf;stroke-width:1.5}
svg circle{fill:#1f5fbf}
svg .fail{stroke:#b00020;stroke-width:2}
svg line.target{stroke:#17693a;stroke-dasharray:4 3}
svg text.target{fill:#17693a}
svg polyline.steps{stroke:#7a3fb0}
svg .frame{fill:#fafafa;stroke:#ccc}
svg text{font-size:11px;fill:#444}
nav a{margin-right:.6em}
code{background:#f4f4f4;padding:0 3px}
`;

function refreshOn(options: StatusPageOptions): boolean {
  return options.refresh !== false;
}

/** A link to a status page, with `refresh=0` when the current page does not reload itself. */
function href(path: string, query: URLSearchParams, options: StatusPageOptions): string {
  if (!refreshOn(options)) query.set("refresh", "0");
  const q = query.toString();
  return esc(q ? `${path}?${q}` : path);
}

/** The link that turns the reload on or off on the current page. */
function refreshLink(self: { path: string; query: URLSearchParams }, options: StatusPageOptions) {
  const q = new URLSearchParams(self.query);
  q.delete("refresh");
  if (refreshOn(options)) {
    q.set("refresh", "0");
    const seconds = Math.max(1, Math.floor(options.refreshSeconds ?? 10));
    return `reloads every ${seconds}s (<a class="refresh" href="${
      esc(`${self.path}?${q}`)
    }">stop</a>)`;
  }
  const s = q.toString();
  return `not reloading (<a class="refresh" href="${
    esc(s ? `${self.path}?${s}` : self.path)
  }">reload every ${Math.max(1, Math.floor(options.refreshSeconds ?? 10))}s</a>)`;
}

function page(title: string, body: string, options: StatusPageOptions): string {
  const refresh = Math.max(1, Math.floor(options.refreshSeconds ?? 10));
  const meta = refreshOn(options) ? `<meta http-equiv="refresh" content="${refresh}">\n` : "";
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
${meta}<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${CSS}</style></head>
<body>
${body}
</body></html>
`;
}

function hpaPath(h: { namespace: string; name: string }): string {
  return `/status/${encodeURIComponent(h.namespace)}/${encodeURIComponent(h.name)}`;
}

function valueCell(m: MetricStatus): string {
  if (m.value === null) return `<span class="muted">none</span>`;
  const age = m.ageSeconds === null
    ? ""
    : ` <span class="muted">(${formatAge(m.ageSeconds)} ago)</span>`;
  return `${formatValue(m.value)}${age}`;
}

function stateCell(state: HpaState, m?: MetricStatus): string {
  return `<span class="state s-${state}">${esc(stateLabel(state, m))}</span>`;
}

/** An error in the overview: whole when short, else cut with the full text one click away. */
function overviewError(error: string): string {
  if (error.length <= OVERVIEW_ERROR_CHARS) return `<span class="err">${esc(error)}</span>`;
  return `<details class="err"><summary>${
    esc(error.slice(0, OVERVIEW_ERROR_CHARS))
  }&hellip;</summary>${esc(error)}</details>`;
}

function targetRef(h: HpaStatus): string {
  const r = h.scaleTargetRef;
  return r ? `${esc(r.kind)}/${esc(r.name)}` : `<span class="muted">none</span>`;
}

function replicasText(h: HpaStatus): string {
  const r = h.replicas;
  const n = (v: number | null): string => v === null ? "?" : String(v);
  return `${n(r.current)} &rarr; ${n(r.desired)}`;
}

/**
 * The overview: every HPA that passes the filter, worst state first, a row per metric with
 * its collector, interval, value and age, state and sparkline.
 */
export function renderOverview(
  report: StatusReport,
  filter: { namespace?: string | null; state?: string | null } = {},
  options: StatusPageOptions = {},
): string {
  const hpas = filterStatus(report, filter);
  const namespaces = [...new Set(report.hpas.map((h) => h.namespace))].sort();
  const query = (ns: string | null | undefined, st: string | null | undefined) => {
    const q = new URLSearchParams();
    if (ns) q.set("namespace", ns);
    if (st) q.set("state", st);
    return q;
  };
  const link = (ns: string | null | undefined, st: string | null | undefined): string =>
    href("/status", query(ns, st), options);
  const nav = [
    `<nav>namespace: <a href="${link(null, filter.state)}">all</a>${
      namespaces.map((ns) => `<a href="${link(ns, filter.state)}">${esc(ns)}</a>`).join("")
    }</nav>`,
    `<nav>state: <a href="${link(filter.namespace, null)}">all</a>${
      STATES.map((s) => `<a href="${link(filter.namespace, s)}">${esc(s)}</a>`).join("")
    }</nav>`,
  ].join("\n");
  const rows: string[] = [];
  for (const h of hpas) {
    const span = Math.max(1, h.metrics.length);
    const head = `<td rowspan="${span}"><a href="${
      href(hpaPath(h), new URLSearchParams(), options)
    }">${esc(h.namespace)}/${esc(h.name)}</a><br>${stateCell(h.state)}</td><td rowspan="${span}">${
      targetRef(h)
    }</td><td rowspan="${span}">${replicasText(h)}</td>`;
    if (h.metrics.length === 0) {
      const why = h.errors.length > 0 ? overviewError(h.errors.join("; ")) : "";
      rows.push(`<tr>${head}<td colspan="6">${why}</td></tr>`);
      continue;
    }
    h.metrics.forEach((m, i) => {
      const error = m.error === null ? "" : `<br>${overviewError(m.error)}`;
      rows.push(
        `<tr class="metric">${i === 0 ? head : ""}<td>${esc(m.type)} ${esc(m.name)}</td><td>${
          esc(m.collector ?? "unknown")
        }</td><td>${m.intervalSeconds}s</td><td>${valueCell(m)}</td><td class="state-cell">${
          stateCell(m.state, m)
        }${error}</td><td>${sparkline(m.history)}</td></tr>`,
      );
    });
  }
  const filters = [
    filter.namespace ? `namespace ${esc(filter.namespace)}` : "",
    filter.state ? `state ${esc(filter.state)}` : "",
  ].filter((s) => s !== "").join(", ");
  const body = `<h1>HPA metrics adapter: status</h1>
<p class="muted">${esc(report.generatedAt)} &middot; ${hpas.length} of ${report.hpas.length} HPAs${
    filters ? ` (${filters})` : ""
  } &middot; <a href="/status.json">JSON</a> &middot; ${
    refreshLink({ path: "/status", query: query(filter.namespace, filter.state) }, options)
  }</p>
${nav}
<table>
<tr><th>HPA</th><th>scale target</th><th>replicas (current &rarr; desired)</th><th>metric</th><th>collector</th><th>interval</th><th>value</th><th>state</th><th>recent</th></tr>
${rows.join("\n")}
</table>${
    report.prometheusAdapter ? `\n${prometheusAdapterSection(report.prometheusAdapter)}` : ""
  }`;
  return page("HPA metrics adapter: status", body, options);
}

/** How many of a rule's metrics are named on the page (the JSON has them all). */
const RULE_METRICS_SHOWN = 20;

/**
 * prometheus-adapter's config: the file, a refused edit, the last discovery, and a row per rule
 * with its queries and the metrics it serves now.
 */
export function prometheusAdapterSection(p: PrometheusAdapterStatus): string {
  const rows = [...p.rules, ...p.externalRules].map((r) => {
    const shown = r.metrics.slice(0, RULE_METRICS_SHOWN).map(esc).join("<br>");
    const more = r.metrics.length > RULE_METRICS_SHOWN
      ? `<br><span class="muted">and ${r.metrics.length - RULE_METRICS_SHOWN} more</span>`
      : "";
    return `<tr><td>${esc(r.rule)}</td><td><code>${esc(r.seriesQuery)}</code></td><td><code>${
      esc(r.metricsQuery)
    }</code></td><td>${r.metrics.length}</td><td>${
      r.metrics.length === 0 ? `<span class="muted">none</span>` : shown + more
    }</td></tr>`;
  });
  const discovery = p.discovery === null
    ? "not yet run"
    : p.discovery.error === null
    ? `last ${esc(p.discovery.at)}`
    : `last ${esc(p.discovery.at)}: ${overviewError(p.discovery.error)}`;
  return `<h2>prometheus-adapter rules</h2>
<p class="muted">${esc(p.config)} &middot; discovery ${discovery} &middot; resourceRules ${
    p.resourceRules ? "served (metrics.k8s.io)" : "none"
  }</p>${
    p.refused === null
      ? ""
      : `\n<p>${
        overviewError(`the file's last edit was refused, the last good config serves: ${p.refused}`)
      }</p>`
  }
<table>
<tr><th>rule</th><th>series query</th><th>metrics query</th><th>metrics</th><th>served now</th></tr>
${rows.join("\n")}
</table>`;
}

function list(items: readonly string[], cls: string): string {
  return items.length === 0
    ? `<p class="muted">none</p>`
    : `<ul class="${cls}">${items.map((i) => `<li>${esc(i)}</li>`).join("")}</ul>`;
}

/**
 * A plot of a schedule's next 24 hours: its value as steps (a horizontal segment per step, so a
 * ramp's steps show as a slope), the value range and the time range.
 */
export function schedulePlot(s: ScheduleStatus, width = 640, height = 160): string {
  const open =
    `<svg class="schedule" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img">`;
  if (s.steps.length === 0) {
    return `${open}<text x="10" y="${height / 2}">no value: ${esc(s.error ?? "")}</text></svg>`;
  }
  const box = { left: 60, top: 10, width: width - 80, height: height - 40 };
  const t0 = Date.parse(s.from);
  const t1 = Date.parse(s.to);
  const hi = Math.max(1, ...s.steps.map((p) => p.value));
  const r = (n: number): number => Math.round(n * 10) / 10;
  const x = (at: number): number =>
    r(box.left + (t1 === t0 ? 0 : (at - t0) / (t1 - t0) * box.width));
  const y = (v: number): number => r(box.top + box.height - v / hi * box.height);
  const points: string[] = [];
  s.steps.forEach((p, i) => {
    const at = Date.parse(p.at);
    const next = i + 1 < s.steps.length ? Date.parse(s.steps[i + 1].at) : t1;
    points.push(`${x(at)},${y(p.value)}`, `${x(next)},${y(p.value)}`);
  });
  const parts = [
    `<title>${esc(scheduleLabel(s))}: ${s.steps[0].value} now</title>`,
    `<rect class="frame" x="${box.left}" y="${box.top}" width="${box.width}" height="${box.height}"/>`,
    `<text x="${box.left - 4}" y="${box.top + 4}" text-anchor="end">${formatValue(hi)}</text>`,
    `<text x="${box.left - 4}" y="${box.top + box.height}" text-anchor="end">0</text>`,
    `<polyline class="steps" points="${points.join(" ")}"/>`,
    `<text x="${box.left}" y="${height - 8}">${esc(s.from)}</text>`,
    `<text x="${box.left + box.width}" y="${height - 8}" text-anchor="end">${esc(s.to)}</text>`,
  ];
  return `${open}${parts.join("")}</svg>`;
}

function scheduleSection(s: ScheduleStatus | undefined, label: string): string {
  if (!s) return `<p class="muted">${esc(label)}: not computed</p>`;
  if (s.error !== null) {
    return `<h3>${esc(label)}: next 24 hours</h3>\n<p class="err">${esc(s.error)}</p>`;
  }
  const { changes, more } = scheduleChangeTexts(s, 5);
  const items = changes.map((c) => `<li>${esc(c)}</li>`);
  if (more > 0) items.push(`<li class="muted">${more} more until ${esc(s.to)}</li>`);
  return `<h3>${esc(label)}: next 24 hours</h3>
<p>value now <b>${s.steps[0].value}</b> (${
    s.active ? "active" : "not active"
  }) &middot; ramps of ${s.rampSteps} steps over ${formatAge(s.scalingWindowSeconds ?? 0)}</p>
${schedulePlot(s)}
${
    items.length > 0
      ? `<ul class="changes">${items.join("")}</ul>`
      : `<p class="muted">no change</p>`
  }`;
}

function metricSection(m: MetricStatus, report: Pick<StatusReport, "schedules">): string {
  const rows: [string, string][] = [
    ["state", stateCell(m.state, m)],
    ["collector", esc(m.collector ?? "unknown")],
    ["interval", `${m.intervalSeconds}s`],
    ["target", esc(targetText(m))],
    [
      "value",
      valueCell(m) + (m.samples > 1 ? ` <span class="muted">from ${m.samples} samples</span>` : ""),
    ],
  ];
  if (m.error !== null) rows.push(["error", `<span class="err">${esc(m.error)}</span>`]);
  if (m.lastError !== null && m.error !== m.lastError) {
    rows.push([
      "last error",
      `${esc(m.lastError)} <span class="muted">(${esc(m.lastErrorAt ?? "")})</span>`,
    ]);
  }
  if (m.formula !== null) rows.push(["formula", `<code>${esc(m.formula)}</code>`]);
  if (m.fallback !== null) rows.push(["fallback", esc(fallbackText(m.fallback))]);
  if (m.selector !== null) rows.push(["selector", `<code>${esc(selectorText(m.selector))}</code>`]);
  for (const [k, v] of annotationConfig(m.config, m.selector)) {
    rows.push([`config ${esc(k)}`, `<code>${esc(v)}</code>`]);
  }
  for (const w of m.warnings) rows.push(["warning", `<span class="warn">${esc(w)}</span>`]);
  const schedule = m.schedule === null
    ? ""
    : `\n${scheduleSection(findSchedule(report, m.schedule), scheduleLabel(m.schedule))}`;
  return `<h2 id="${esc(m.key)}">${esc(m.type)} ${esc(m.name)}${
    m.hidden ? " (hidden formula input)" : ""
  }</h2>
<table class="facts">${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("")}</table>
${metricPlot(m)}${schedule}`;
}

/** The replica guard's last decision as table rows. */
function guardSection(g: ReplicaGuardStatus): string {
  if (g.at === null) {
    return `<h2>Replica guard</h2>
<p class="muted">no decision yet: the guard decides on the leader, once per pass</p>`;
  }
  const rows: [string, string][] = [["decided at", esc(g.at)]];
  if (g.query !== null) {
    rows.push(["query", `<code>${esc(g.query)}</code>`]);
    rows.push(["query result", g.queryValue === null ? "none" : formatValue(g.queryValue)]);
  }
  if (g.minReplicas !== null) rows.push(["minReplicas", String(g.minReplicas)]);
  const cap = guardCapText(g);
  if (cap !== null) rows.push(["scale-down cap", esc(cap)]);
  if (g.message !== null) {
    rows.push([
      "decision",
      `${esc(g.message)} <span class="muted">(${esc(guardOutcomeText(g))})</span>`,
    ]);
  }
  if (g.error !== null) rows.push(["error", `<span class="err">${esc(g.error)}</span>`]);
  return `<h2>Replica guard</h2>
<table class="guard">${
    rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("")
  }</table>`;
}

function scaledObjectSection(so: ScaledObjectStatus): string {
  const owner = so.owner === "hpa-metrics-adapter"
    ? "this adapter (--keda-scaled-objects)"
    : so.owner === "keda-operator"
    ? "KEDA's operator (its metrics are KEDA's or the delegate's)"
    : "not this adapter (another object owns the HPA, or the selector leaves it out)";
  const ready = so.ready === null
    ? "not written yet"
    : `${esc(so.ready.status)}${so.ready.reason ? ` ${esc(so.ready.reason)}` : ""}${
      so.ready.message
        ? `: <span class="${so.ready.status === "True" ? "muted" : "err"}">${
          esc(so.ready.message)
        }</span>`
        : ""
    }`;
  const rows = so.triggers.map((t) =>
    `<tr><td>${t.index}</td><td>${esc(t.type)}</td><td>${
      t.name === null ? "" : esc(t.name)
    }</td><td>${
      t.metricName === null
        ? '<span class="muted">Resource</span>'
        : `<code>${esc(t.metricName)}</code>`
    }</td><td>${t.activation === null ? "" : `&gt; ${formatValue(t.activation)}`}</td><td>${
      t.active === null ? "" : t.active ? "active" : "inactive"
    }</td></tr>`
  ).join("");
  const loop = so.loop === null ? "" : [
    [
      "Active",
      so.loop.active === null
        ? "not written yet"
        : `${esc(so.loop.active.status)}${
          so.loop.active.reason ? ` ${esc(so.loop.active.reason)}` : ""
        }`,
    ],
    ["last active", so.loop.lastActiveTime === null ? "never" : esc(so.loop.lastActiveTime)],
    ...(so.loop.cooldownEndsAt === null ? [] : [["cooldown ends", esc(so.loop.cooldownEndsAt)]]),
    ["next", esc(so.loop.next)],
  ].map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("");
  return `<h2>ScaledObject ${esc(so.name)}</h2>
<table class="scaledobject"><tr><th>served by</th><td>${owner}</td></tr><tr><th>Ready</th><td>${ready}</td></tr>${loop}</table>
<table class="triggers"><tr><th>trigger</th><th>type</th><th>name</th><th>metric</th><th>activation</th><th>activity</th></tr>${rows}</table>`;
}

/**
 * One HPA: its planner errors and warnings, the replica comparison, the replica guard's last
 * decision (when it runs for the HPA), a plot per metric, and the next 24 hours of each
 * ScalingSchedule it uses (from `report.schedules`).
 */
export function renderHpaPage(
  h: HpaStatus,
  report: Pick<StatusReport, "generatedAt"> & Partial<Pick<StatusReport, "schedules">>,
  options: StatusPageOptions = {},
): string {
  const r = h.replicas;
  const n = (v: number | null): string => v === null ? "?" : String(v);
  const schedules = { schedules: report.schedules ?? [] };
  const body = `<p><a href="${
    href("/status", new URLSearchParams(), options)
  }">&larr; all HPAs</a></p>
<h1>${esc(h.namespace)}/${esc(h.name)} ${stateCell(h.state)}</h1>
<p class="muted">${esc(report.generatedAt)} &middot; <a href="/status.json">JSON</a> &middot; ${
    refreshLink({ path: hpaPath(h), query: new URLSearchParams() }, options)
  }</p>
<table>
<tr><th>scale target</th><td>${targetRef(h)}</td></tr>
<tr><th>min / max replicas</th><td>${n(h.minReplicas)} / ${n(h.maxReplicas)}</td></tr>
</table>
<h2>Replicas</h2>
<table class="replicas">
<tr><th>current (HPA status)</th><td>${n(r.current)}</td></tr>
<tr><th>desired (HPA status)</th><td>${n(r.desired)}</td></tr>
<tr><th>computed here</th><td>${n(r.computed)}</td></tr>
</table>
${list(r.reasons, "reasons")}
<p class="muted">${esc(r.note)}</p>
${h.replicaGuard === null ? "" : `${guardSection(h.replicaGuard)}\n`}${
    h.scaledObject === null ? "" : `${scaledObjectSection(h.scaledObject)}\n`
  }<h2>Planner errors</h2>
${
    list([
      ...h.errors,
      ...h.metrics.filter((m) => m.state === "invalid").map((m) =>
        `${m.type} ${m.name}: ${m.error}`
      ),
    ], "err")
  }
<h2>Planner warnings</h2>
${list(h.warnings, "warn")}
${h.metrics.map((m) => metricSection(m, schedules)).join("\n")}`;
  return page(`${h.namespace}/${h.name}: status`, body, options);
}

/** What one request asks of the status document. */
export interface StatusRequest {
  /** Only this HPA (one HPA's page), else every HPA. */
  hpa?: { namespace: string; name: string };
  /** Compute the schedules' next 24 hours (one HPA's page and the JSON; not the overview). */
  schedules: boolean;
}

/** Options of {@linkcode addStatusRoutes}. */
export interface StatusRoutesOptions extends StatusPageOptions {
  /** The document now (built on each request), as much of it as the request needs. */
  report: (request: StatusRequest) => StatusReport;
}

function html(body: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}

/**
 * Serve `/status`, `/status/<namespace>/<name>` and `/status.json` on `app`. The pages reload
 * themselves unless the query has `refresh=0`.
 *
 * @example
 * ```ts
 * addStatusRoutes(app, { report: (request) => buildStatus({ ... }) });
 * ```
 */
export function addStatusRoutes(app: Hono, options: StatusRoutesOptions): void {
  app.get(
    "/status.json",
    () =>
      new Response(JSON.stringify(options.report({ schedules: true }), null, 2) + "\n", {
        headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
      }),
  );
  const pageOptions = (refresh: string | undefined): StatusPageOptions => ({
    ...options,
    refresh: refresh !== "0",
  });
  app.get("/status", (c) =>
    html(renderOverview(
      options.report({ schedules: false }),
      { namespace: c.req.query("namespace"), state: c.req.query("state") },
      pageOptions(c.req.query("refresh")),
    )));
  app.get("/status/:namespace/:name", (c) => {
    const namespace = c.req.param("namespace");
    const name = c.req.param("name");
    const po = pageOptions(c.req.query("refresh"));
    const report = options.report({ hpa: { namespace, name }, schedules: true });
    const h = report.hpas.find((x) => x.namespace === namespace && x.name === name);
    if (!h) {
      return html(
        page(
          "not found",
          `<p><a href="${href("/status", new URLSearchParams(), po)}">&larr; all HPAs</a></p>` +
            `<p>no HPA ${esc(namespace)}/${esc(name)} is known</p>`,
          po,
        ),
        404,
      );
    }
    return html(renderHpaPage(h, report, po));
  });
}
