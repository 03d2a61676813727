/**
 * The status page on `--metrics-address`: `GET /status` (every HPA, failing first, filtered by
 * `?namespace=` and `?state=`), `GET /status/<namespace>/<name>` (one HPA with a plot per
 * metric) and `GET /status.json` (status_model.ts' document). Server-rendered HTML with inline
 * SVG and CSS: no script, no external resource (it works in an air-gapped cluster); it reloads
 * itself. Every string that comes from the cluster goes through {@linkcode escapeHtml}.
 *
 * @module
 */
import type { Hono } from "hono";
import { parseQuantity } from "../core/quantity.ts";
import {
  filterStatus,
  type HpaState,
  type HpaStatus,
  type MetricStatus,
  STATES,
  type StatusPoint,
  type StatusReport,
} from "./status_model.ts";

/** Options of {@linkcode renderOverview} and {@linkcode renderHpaPage}. */
export interface StatusPageOptions {
  /** Seconds between reloads (`<meta http-equiv="refresh">`). Default 10. */
  refreshSeconds?: number;
}

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
.s-invalid,.s-failing,.s-conflict{color:#b00020}.s-expired,.s-fallback{color:#a05a00}
.s-pending,.s-none{color:#666}.s-collected,.s-hidden{color:#17693a}
.err{color:#b00020}.warn{color:#a05a00}.muted{color:#666}
svg polyline{fill:none;stroke:#1f5fbf;stroke-width:1.5}
svg circle{fill:#1f5fbf}
svg .fail{stroke:#b00020;stroke-width:2}
svg .target{stroke:#17693a;stroke-dasharray:4 3;fill:#17693a}
svg .frame{fill:#fafafa;stroke:#ccc}
svg text{font-size:11px;fill:#444}
nav a{margin-right:.6em}
code{background:#f4f4f4;padding:0 3px}
`;

function page(title: string, body: string, options: StatusPageOptions): string {
  const refresh = Math.max(1, Math.floor(options.refreshSeconds ?? 10));
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="refresh" content="${refresh}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)}</title>
<style>${CSS}</style></head>
<body>
${body}
</body></html>
`;
}

function hpaHref(h: { namespace: string; name: string }): string {
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
  const link = (ns: string | null | undefined, st: string | null | undefined): string => {
    const q = new URLSearchParams();
    if (ns) q.set("namespace", ns);
    if (st) q.set("state", st);
    const s = q.toString();
    return s ? `/status?${esc(s)}` : "/status";
  };
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
    const head = `<td rowspan="${span}"><a href="${esc(hpaHref(h))}">${esc(h.namespace)}/${
      esc(h.name)
    }</a><br>${stateCell(h.state)}</td><td rowspan="${span}">${
      targetRef(h)
    }</td><td rowspan="${span}">${replicasText(h)}</td>`;
    if (h.metrics.length === 0) {
      const why = h.errors.length > 0 ? `<span class="err">${esc(h.errors.join("; "))}</span>` : "";
      rows.push(`<tr>${head}<td colspan="6">${why}</td></tr>`);
      continue;
    }
    h.metrics.forEach((m, i) => {
      const error = m.error === null ? "" : `<br><span class="err">${esc(m.error)}</span>`;
      rows.push(
        `<tr class="metric">${i === 0 ? head : ""}<td>${esc(m.type)} ${esc(m.name)}</td><td>${
          esc(m.collector ?? "unknown")
        }</td><td>${m.intervalSeconds}s</td><td>${valueCell(m)}</td><td>${
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
  } &middot; <a href="/status.json">JSON</a></p>
${nav}
<table>
<tr><th>HPA</th><th>scale target</th><th>replicas (current &rarr; desired)</th><th>metric</th><th>collector</th><th>interval</th><th>value</th><th>state</th><th>recent</th></tr>
${rows.join("\n")}
</table>`;
  return page("HPA metrics adapter: status", body, options);
}

function list(items: readonly string[], cls: string): string {
  return items.length === 0
    ? `<p class="muted">none</p>`
    : `<ul class="${cls}">${items.map((i) => `<li>${esc(i)}</li>`).join("")}</ul>`;
}

function metricSection(m: MetricStatus): string {
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
  if (m.fallback !== null) {
    rows.push([
      "fallback",
      `${
        m.fallback.active ? "active" : "not active"
      }, ${m.fallback.consecutiveFailures} consecutive failures`,
    ]);
  }
  for (const [k, v] of Object.entries(m.config)) {
    rows.push([`config ${esc(k)}`, `<code>${esc(v)}</code>`]);
  }
  for (const w of m.warnings) rows.push(["warning", `<span class="warn">${esc(w)}</span>`]);
  return `<h2 id="${esc(m.key)}">${esc(m.type)} ${esc(m.name)}${
    m.hidden ? " (hidden formula input)" : ""
  }</h2>
<table>${rows.map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`).join("")}</table>
${metricPlot(m)}`;
}

/** One HPA: its planner errors and warnings, the replica comparison, a plot per metric. */
export function renderHpaPage(
  h: HpaStatus,
  report: Pick<StatusReport, "generatedAt">,
  options: StatusPageOptions = {},
): string {
  const r = h.replicas;
  const n = (v: number | null): string => v === null ? "?" : String(v);
  const body = `<p><a href="/status">&larr; all HPAs</a></p>
<h1>${esc(h.namespace)}/${esc(h.name)} ${stateCell(h.state)}</h1>
<p class="muted">${esc(report.generatedAt)} &middot; <a href="/status.json">JSON</a></p>
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
<h2>Planner errors</h2>
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
${h.metrics.map(metricSection).join("\n")}`;
  return page(`${h.namespace}/${h.name}: status`, body, options);
}

/** Options of {@linkcode addStatusRoutes}. */
export interface StatusRoutesOptions extends StatusPageOptions {
  /** The document now (built on each request). */
  report: () => StatusReport;
}

function html(body: string, status = 200): Response {
  return new Response(body, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" },
  });
}

/**
 * Serve `/status`, `/status/<namespace>/<name>` and `/status.json` on `app`.
 *
 * @example
 * ```ts
 * addStatusRoutes(app, { report: () => buildStatus({ ... }) });
 * ```
 */
export function addStatusRoutes(app: Hono, options: StatusRoutesOptions): void {
  app.get("/status.json", () =>
    new Response(JSON.stringify(options.report(), null, 2) + "\n", {
      headers: { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" },
    }));
  app.get("/status", (c) =>
    html(renderOverview(
      options.report(),
      { namespace: c.req.query("namespace"), state: c.req.query("state") },
      options,
    )));
  app.get("/status/:namespace/:name", (c) => {
    const namespace = c.req.param("namespace");
    const name = c.req.param("name");
    const report = options.report();
    const h = report.hpas.find((x) => x.namespace === namespace && x.name === name);
    if (!h) {
      return html(
        page(
          "not found",
          `<p><a href="/status">&larr; all HPAs</a></p><p>no HPA ${esc(namespace)}/${
            esc(name)
          } is known</p>`,
          options,
        ),
        404,
      );
    }
    return html(renderHpaPage(h, report, options));
  });
}
