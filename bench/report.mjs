// The report writer: bench/README.md from the numbers of one run (bench/results.json), and the
// hand-written notes of runs made with --no-write, kept as they are between two marker lines.
import { readFileSync, writeFileSync } from "node:fs";

/** The line before the kept notes (see {@linkcode keptNotes}). */
export const NOTES_START_MARKER = "<!-- measured-on-their-own:start -->";
/** The line after the kept notes. */
export const NOTES_END_MARKER = "<!-- measured-on-their-own:end -->";
/** The notes when the previous README has none (no file, or no markers). */
export const NOTES_PLACEHOLDER = "Measurements made with `--no-write` are recorded here by hand.\n";

const mark = (ok) => (ok ? "ok" : "**MISS**");
/**
 * The budget column of a row: ok or MISS for the binary, the artifact that ships; "within" or
 * "over" for the development runtimes, measured for information.
 */
const budgetMark = (runtime, ok) => runtime === "binary" ? mark(ok) : ok ? "within" : "over";

function table(head, rows) {
  return [
    `| ${head.join(" | ")} |`,
    `| ${head.map(() => "---").join(" | ")} |`,
    ...rows.map((r) => `| ${r.join(" | ")} |`),
  ].join("\n");
}

/**
 * The hand-written notes of a README this module rendered: the text between the line
 * {@linkcode NOTES_START_MARKER} and {@linkcode NOTES_END_MARKER}, byte for byte (each line with
 * its newline), or null when `previousText` is null or holds neither marker. Throws when only
 * one marker is there, or they are out of order or repeated: rendering would drop the notes.
 *
 * @param {string | null | undefined} previousText
 * @returns {string | null}
 */
export function keptNotes(previousText) {
  if (previousText == null) return null;
  const start = previousText.indexOf(NOTES_START_MARKER);
  const end = previousText.indexOf(NOTES_END_MARKER);
  if (start < 0 && end < 0) return null;
  if (
    start < 0 || end < start || previousText.indexOf(NOTES_START_MARKER, start + 1) >= 0 ||
    previousText.indexOf(NOTES_END_MARKER, end + 1) >= 0
  ) {
    throw new Error(
      `markers "${NOTES_START_MARKER}" and "${NOTES_END_MARKER}" must appear once, in order`,
    );
  }
  return previousText.slice(start + NOTES_START_MARKER.length, end).replace(/^\n/, "");
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchor = (heading) =>
  heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");

/**
 * A line pointing from a section of the run to the notes' subsection on the same subject (its
 * `### ` heading starts with `subject`), or null when the notes have none.
 */
function notesPointer(notes, subject) {
  const heading = notes?.match(/^### (.*)$/gm)?.map((h) => h.slice(4))
    .find((h) => h.startsWith(subject));
  return heading ? `See also [${heading}](#${anchor(heading)}) below.\n` : null;
}

/** The sharded row's warm-up in a report, s (reports before it was a setting: 5). */
function shardWarm(report) {
  return report.settings?.shard?.warmSeconds ?? 5;
}

/**
 * Render the README of bench/ for `report` (what bench/run.mjs writes to results.json), ending
 * with the section "Measured on their own": `notes` (see {@linkcode keptNotes}) between the two
 * marker lines, as they are, or {@linkcode NOTES_PLACEHOLDER} when null.
 *
 * @param {any} report
 * @param {string | null} [notes]
 * @returns {string}
 */
export function renderReport(report, notes = null) {
  const b = report.budgets;
  const r = report.results;
  /** Whether the sharded rows have each replica's CPU alone (runs since 2026-11-28). */
  const alone = r.shard?.some((x) => x.aloneMaxCoresRatio !== undefined) ?? false;
  /** And whether they read each alone too (runs after 4f26024). */
  const aloneReads = r.shard?.some((x) => x.perReplica?.[0]?.aloneReadP99Ms !== undefined) ??
    false;
  const out = [];
  /** Push the pointer to the notes on `subject`, if they have a subsection on it. */
  const pointer = (subject) => {
    const line = notesPointer(notes, subject);
    if (line) out.push(line);
  };
  out.push(`# Benchmarks

\`npm run bench\` runs the whole suite (about 50 minutes), \`npm run bench -- --quick\` a short
version (about a minute: the binary only, 2,000 HPAs, the same scrape rate on fewer pods, and
shorter windows). Options: \`--runtimes binary,bun,deno,node\`,
\`--only startup,serving,tls,fanout,formula,fairshare,cluster,shard\`,
\`--sizes 2000,10000\`, \`--seconds N\`, \`--connections N\`, \`--build\` (bundle and compile the
working tree into a temp folder instead of using \`dist/\`), \`--artifacts DIR\` (the build
\`scripts/build.mjs --outdir DIR\` made), \`--adapter-arg FLAG\` (repeatable: added to every
adapter's command line, for an A/B of one flag), \`--shard-shapes pods,queue\`,
\`--shard-warm-seconds N\` (the sharded row's warm-up, default 60), \`--shard-pods-interval S\` (its
pods shape's interval, default 7.5), \`--no-write\`, \`--no-pin\`. It needs
\`wrk\` (Debian package \`wrk\`) and Go (it builds \`bench/loadgen\`, standard library only).

What is measured (everything on loopback, every process stopped by its PID):

- **Serving**: the adapter in file mode on 2,000 and 10,000 HPAs (each with an Object metric on
  its own ScalingSchedule and an External json-path metric), plus one HPA with a Pods metric on
  50 pods. wrk hammers three reads: an object metric, the pods wildcard (50 items) and an
  external metric, each against the adapter and against the **floor**, a bare \`node:https\`
  server on the same runtime answering the same bytes (status, body, and every header the
  adapter sent except Date, Content-Length and Connection): a warm-up of each (quick: before
  the first path only), then rounds (three quick, eight full) of one adapter run and one floor run. "x floor" is the median of
  the rounds' ratios (each adapter run against the floor run right after it); requests/s and
  latencies are the median run of each side (every run in results.json). Then one paced run
  of each side for latency ("p99 paced": every connection waits 1 ms before each request, a
  few thousand requests/s): at full load p99 is mostly queueing, and this machine gives the
  bare floor itself a full-load p99 of 2 to over 7 ms. With \`taskset\` (util-linux) the
  server under test runs on CPU 0 with all its threads and wrk on CPU 1 (\`--no-pin\`: not
  pinned). Budget: >= ${b.servingFloorRatio}x the floor's requests/s, paced p99 <
  ${b.servingP99Ms} ms.
- **Serving with the client certificate** (section \`tls\`): the path of every real cluster. The
  adapter verifies the aggregator's front-proxy certificate (\`--requestheader-client-ca-file\`,
  allowed name front-proxy-client) and takes the user from X-Remote-User. \`bench/loadgen\` (Go)
  presents that certificate and header, which wrk cannot, and reads the object metric, with the
  same rounds and paced run. Its floor asks for, verifies and reads the same certificate (once
  per connection); on Bun that is a \`node:tls\` server feeding a \`node:http\` server, as in the
  adapter, because Bun's \`node:https\` and \`Bun.serve\` do not show the certificate to the
  handler. Same budget.
- **Fan-out**: 1,000 HPAs x 20 pods, every pod its own loopback address (127.0.x.y) served by
  the fake fleet (\`bench/fleet.mjs\`, one listener per pod, two processes), scraped every 15 s =
  1,333 scrapes/s. The fleet records the longest gap between two scrapes of a pod; afterwards
  every HPA's values are read back. Budget: no gap over the interval (+1 s), every pod scraped,
  every value fresh, no failed collection, CPU < ${b.fanoutCores} cores.
- **Fair share** (section \`fairshare\`, issue 25): namespace \`noisy\` holds 1,000 HPAs and
  namespace \`quiet\` one, each a Pods json-path metric on one pod collected every second (the
  binary, file mode). The lone HPA's pod has a fleet process of its own, which records the
  longest gap between two of its scrapes over the window (full: 30 s, quick: 6 s). Budget: the
  lone HPA is scraped, with no gap over the interval + 1 s.
- **Formula metrics** (section \`formula\`, issue 21): 1,000 HPAs in file mode, each with one
  External formula metric (\`matchLabels: {type: formula}\`; in turn \`rps + queue_length\`,
  \`max(rps, queue_length) * 2\` and \`rps / 32 + queue_length\`) over two hidden inputs collected
  every 15 s: a Pods json-path metric on its 2 pods (127.0.x.y, the fake fleet) and an External
  json-path metric on its queue endpoint = 133 collections/s. CPU over a steady window (full:
  45 s from one interval after the start; quick: 6 s from 4 s after it), RSS read once a second
  over the window ("RSS" the median, "highest" the largest reading), then every HPA's formula
  read back through the external metrics API and checked against the exact value of its
  expression on the fleet's numbers, truncated to milli ("wrong / missing / stale": a different
  value or labels, no value, a timestamp older than the interval + 1 s), and the hidden inputs
  of ten HPAs must not be served. The binary (\`--runtimes\` picks others). Budget: every value
  right, no failed collection, CPU < ${b.fanoutCores} cores and RSS < ${b.memoryMiBAt2000} MiB (the
  2,000-HPA memory budget); the column names what missed.
- **Memory**: RSS with no HPAs (idle), and with 2,000 and 10,000 HPAs once their values are
  collected (and after the serving load). At 2,000 HPAs in a full run, RSS is read once a
  second for a minute ("RSS" is the median, "highest" the largest reading): it rises and falls
  with the garbage collector. Budget: < ${b.memoryMiBAt2000} MiB at 2,000 (the median). Mode
  "file" reads manifests; mode "cluster" is the binary against the end-to-end suite's real
  control plane (kube-apiserver, controller manager, the HPA controller at its default 15 s
  sync), the 2,000 HPAs and their schedules created with kubectl (section \`cluster\`, full run
  only): RSS from 15 s after the last value is served, for 30 s, while nobody reads values (the
  HPAs' scale targets do not exist, so the HPA controller reads none). Mode "cluster, full
  read" (issue 28) is the same adapter while it is read as the HPA controller reads: every value
  (each HPA's object metric on its ScalingSchedule and its external metric, 4,000 URLs, with the
  HPA controller's query strings) through the aggregator's identity (the harness's front-proxy
  client certificate; X-Remote-User
  \`system:serviceaccount:kube-system:horizontal-pod-autoscaler\`, the user of the harness's
  controller manager with \`--use-service-account-credentials\`, and its three groups) straight
  to the adapter's port in the harness's network namespace, by \`bench/loadgen\` on 8
  connections, the whole list once every 15 s (267 reads/s) for a minute; RSS read once a
  second over that minute (median, highest). Same budget.
- **Cluster at rest** (section \`cluster\`, issue 28, full run only): the same control plane
  and 2,000 HPAs, before the full read, for a minute with nobody reading values: the adapter's
  requests to kube-apiserver (counted by kube-apiserver's audit log of the adapter's service
  account, \`HPA_E2E_AUDIT_LOG=1\` in the harness; by verb and resource in results.json), its CPU
  seconds a minute and its collections a minute (own metrics), and CPU per collection. Budget:
  <= ${
    b.apiRequestsPerMinuteAtRest ?? 50
  } requests a minute (the leader's Lease renewals included: 30 a minute at
  the default 2 s retry period), not counting the ScalingSchedule status writes of schedules
  that turned active or inactive in that minute (\`scheduleFlips\`, from the manifests'
  times: at most that many \`patch scalingschedules/status\` are set apart; any other write
  counts). The row also shows the SubjectAccessReviews the
  adapter asked during the full read (a minute), and the authorization caches' cost after the
  full read's URLs (\`bench/auth_cache_cost.ts\` on Bun: answers cached, bytes per cached
  answer without group reviews, bytes per URL of the fast path's memo).
- **Sharded collection** (section \`shard\`, issue 29, full run only): collection on the
  end-to-end control plane, once by one replica of the binary and once by three with
  \`--shard-collection\` (the default Lease timing: 15 s, renewed every 2 s), each run on a fresh
  control plane; the replica guard, the Knative reconciler and ScalingSchedules off, \`--v=0\`;
  each as it ships otherwise (the single replica releases memory every 30 s, the sharded ones
  only after their first round: \`--memory-release-interval\`). Two shapes (\`--shard-shapes pods,queue\`):
  - **pods**, the fan-out fleet's work (1,333 scrapes/s): 500 HPAs, each a Pods json-path
    metric on the 20 pods of its StatefulSet every 7.5 s (66.7 collections/s of 20 scrapes and
    one record for the peers each; minReplicas = maxReplicas, so the HPA controller reads every
    value each sync but scales nothing). 10,000 pods, bound to a node no kubelet serves and
    given a loopback address of the harness's network namespace through their status, answered
    there by the fake fleet (\`bench/shard_pods.mjs\`, \`bench/shard_pods_apply.ts\`). The budget
    row.
  - **queue**, the most the peers' records can weigh against the collection: 1,333 HPAs, each
    an External json-path metric on its own queue endpoint every second (1,333 collections/s of
    one read and one record each). For information: its CPU ratio has no budget.

  Before the HPAs, each replica's CPU over 10 s with none (results.json: \`idleCores\`). Once
  every replica holds every value (sharded: sees three members, and the owned shares add up to
  the whole), ${shardWarm(report)} s of warm-up${
    shardWarm(report) >= 60
      ? " (the steady state: past the HPA controller's first syncs of every HPA, and past the JIT's tier-up, which a replica running the hot paths at a third of the rate reaches later)"
      : ""
  }, then a 30 s window: the fleet's reads of every pod or queue and the longest
  gap between two of them (or since the last, at the end), the collections of all replicas
  together, CPU and RSS (median of one reading a second) of each replica, the values each holds
  (stored custom or external values: every replica serves every value), push failures. After
  the window, each replica in turn is read as the HPA controller reads (every HPA's pods or
  external metric, its query string, the aggregator's identity as in the cluster full read;
  \`bench/loadgen\` on 4 connections at ${report.settings?.shard?.readRate ?? 200} reads/s, ${
    report.settings?.shard?.readWarmSeconds ?? 2
  } s of warm-up, then ${
    report.settings?.shard?.readSeconds ?? 10
  } s): "read p99" is that run's, for information (the row's load, control plane, fleet and
  replicas on two cores, is in its tail, the single replica's too). In brackets the floor's,
  read the same way right after: \`bench/floor.mjs\` on Bun, on this host's loopback, asking
  for and reading the client certificate and answering every path with the bytes the first
  replica answered. With the push every value is
  local on every replica; a read forwarded to the value's owner would add one such round trip
  between two replicas.${
    alone
      ? `

  "Alone": each of three in turn with the other two paused (SIGSTOP) for ${
        report.settings?.shard?.aloneSettleSeconds ?? 1.5
      } s, then its CPU over
  ${report.settings?.shard?.aloneSeconds ?? 6} s, then ${
        report.settings?.shard?.aloneResumeSeconds ?? 10
      } s for them to catch up; ${
        report.settings?.shard?.aloneRounds ?? 2
      } rounds, before the reads.${
        aloneReads
          ? `
  After the floor, each is read the same way alone: ${
            report.settings?.shard?.aloneReadWarmSeconds ?? 1
          } s of warm-up, then ${report.settings?.shard?.aloneReadSeconds ?? 5} s.`
          : ""
      }
  So each has the two cores to itself, as a replica on a node of its own would, with the
  control plane and the fleet (serving its share) as the single replica had them. A pause is
  shorter than the Lease and a push's timeout: no share moves, no push fails. It receives no
  records while paused (about 1 ms of CPU a second).`
      : ""
  }

  Budget: everything read in the window, no gap over the interval + 1 s, collections/s within
  5% of the target, every value held by every replica, no push failure${
    alone ? " (also while paused)" : ""
  },
  every read answered (2xx), and (pods) the most loaded of three replicas at most ${
    b.shardCoresRatio ?? 0.5
  }x
  the single replica's cores${
    alone && b.shardAloneCoresRatio !== undefined
      ? ` with all three running, and at most ${b.shardAloneCoresRatio}x alone (the issue's
  "about a third")`
      : ""
  }.
- **Startup**: process start to \`/readyz\` 200, with no HPAs (and with 2,000 for information),
  the certificate already on disk. Budget: < ${b.startupMs} ms for the binary.

Budgets bind the binary, the artifact that ships (\`budget\`: ok or **MISS**), as the startup
budget always did. The bun, deno and node rows run the same bundle on the development runtimes;
their \`budget\` column says within or over the same limits.

The machine has 2 cores shared with other work: the 1-minute load average is in every row. A
row measured under a load average well above 2 is noise, not a result.
`);
  out.push(`## Last run

- date: ${report.date} (${report.mode}, ${report.durationSeconds} s)
- machine: ${report.machine.cpu}, ${report.machine.cores} cores, ${report.machine.memoryGiB} GiB,
  Linux ${report.machine.kernel}; load average during the run: ${report.machine.load1.join(", ")}
- commit: ${report.commit}; artifacts: ${report.artifacts.source} (built ${report.artifacts.builtAt})
- runtimes: ${Object.entries(report.runtimes).map(([k, v]) => `${k} = ${v}`).join("; ")}
- load generator: ${report.settings.wrk}
`);
  const servingTables = [
    ["### Serving (requests/s, latency ms)\n", r.serving.filter((s) => !s.clientCert)],
    [
      "### Serving with the client certificate (requests/s, latency ms)\n",
      r.serving.filter((s) => s.clientCert),
    ],
  ];
  for (const [title, rows] of servingTables) {
    if (rows.length === 0) continue;
    out.push(title);
    out.push(table(
      [
        "runtime",
        "HPAs",
        "read",
        "adapter req/s",
        "p50",
        "p99",
        "p99 paced",
        "floor req/s",
        "floor p99",
        "floor p99 paced",
        "x floor",
        "load",
        "budget",
      ],
      rows.map((s) => [
        s.runtime,
        s.hpas,
        s.path,
        s.adapter.rps,
        s.adapter.p50Ms,
        s.adapter.p99Ms,
        s.adapter.pacedP99Ms,
        s.floor.rps,
        s.floor.p99Ms,
        s.floor.pacedP99Ms,
        s.ratio,
        s.load1,
        budgetMark(s.runtime, s.ok),
      ]),
    ));
    out.push("");
  }
  if (r.fanout) {
    const f = r.fanout;
    out.push("### Collection fan-out\n");
    out.push(table(
      [
        "runtime",
        "HPAs x pods",
        "interval",
        "scrapes/s (target)",
        "max gap ms",
        "never scraped",
        "stale / missing",
        "failed collections",
        "cores",
        "fleet cores",
        "RSS MiB",
        "load",
        "budget",
      ],
      [[
        f.runtime,
        `${f.hpas} x ${f.podsPerHpa}`,
        `${f.intervalSeconds} s`,
        `${f.scrapesPerSecond} (${f.targetScrapesPerSecond})`,
        f.maxGapMs,
        f.neverScraped,
        `${f.staleValues} / ${f.missingValues}`,
        f.collectionsError,
        f.cores,
        f.fleetCores,
        f.rssMiB,
        f.load1,
        mark(f.ok),
      ]],
    ));
    out.push("");
  }
  if (r.fairshare) {
    const f = r.fairshare;
    out.push("### Fair share\n");
    out.push(table(
      [
        "noisy HPAs",
        "interval",
        "noisy scrapes/s",
        "noisy max gap ms",
        "lone HPA's scrapes",
        "lone HPA's max gap ms",
        "cores",
        "budget",
      ],
      [[
        f.noisyHpas,
        `${f.intervalSeconds} s`,
        f.noisyScrapesPerSecond,
        f.noisyMaxGapMs,
        f.quietScrapes,
        f.quietMaxGapMs,
        f.cores,
        mark(f.ok),
      ]],
    ));
    out.push("");
  }
  if (r.formula?.length > 0) {
    out.push("### Formula metrics\n");
    out.push(table(
      [
        "runtime",
        "HPAs x inputs",
        "interval",
        "collections/s (target)",
        "wrong / missing / stale",
        "hidden served",
        "failed collections",
        "cores",
        "fleet cores",
        "RSS MiB",
        "highest",
        "values served ms",
        "load",
        "budget",
      ],
      r.formula.map((f) => [
        f.runtime,
        `${f.hpas} x 2 (${f.podsPerHpa} pods, 1 queue)`,
        `${f.intervalSeconds} s`,
        `${f.collectionsPerSecond} (${f.targetCollectionsPerSecond})`,
        `${f.wrongValues} / ${f.missingValues} / ${f.staleValues}`,
        f.hiddenServed,
        f.collectionsError,
        f.cores,
        f.fleetCores,
        f.rssMiB,
        f.rssMaxMiB,
        f.valuesMs,
        f.load1,
        budgetMark(f.runtime, f.ok) + (f.ok ? "" : ` (${f.misses.join(", ")})`),
      ]),
    ));
    out.push("");
  }
  if (r.clusterRest) {
    const c = r.clusterRest;
    const f = c.fullRead ?? {};
    const cost = f.authCache ?? {};
    out.push("### Cluster at rest, and the full read's authorization\n");
    pointer("Cluster at rest");
    out.push(table(
      [
        "HPAs",
        "API requests/min at rest",
        "by verb and resource",
        "CPU s/min",
        "collections/min",
        "CPU ms/collection",
        "SubjectAccessReviews/min (full read)",
        "answers cached (without group reviews)",
        "bytes per cached answer",
        "fast-path bytes per URL",
        "load",
        "budget",
      ],
      [[
        c.hpas,
        c.apiRequestsPerMinuteBesidesChanges === undefined ||
          c.apiRequestsPerMinuteBesidesChanges === c.apiRequestsPerMinute
          ? c.apiRequestsPerMinute
          : `${c.apiRequestsPerMinute} (${c.apiRequestsPerMinuteBesidesChanges} besides ${c.scheduleFlips} schedule flips)`,
        Object.entries(c.apiRequestsByVerbResource).map(([k, v]) => `${k} ${v}`).join(", "),
        c.cpuSecondsPerMinute,
        c.collectionsPerMinute,
        c.cpuMsPerCollection,
        f.subjectAccessReviewsPerMinute ?? "",
        cost.groupReviews
          ? `${
            f.authCacheEntries ?? cost.groupReviews.sarCacheEntries
          } (${cost.exactOnly?.sarCacheEntries})`
          : "",
        cost.exactOnly?.bytesPerSarEntry ?? "",
        cost.groupReviews?.fastMemoBytesPerUrl ?? "",
        c.load1,
        mark(c.ok),
      ]],
    ));
    out.push("");
  }
  if (r.shard?.length > 0) {
    out.push("### Sharded collection\n");
    pointer("Sharded collection");
    const each = (rows, k) => rows.map((x) => x[k]).join(" / ");
    out.push(table(
      [
        "shape",
        "replicas",
        "HPAs",
        "interval",
        "collections/s (target)",
        "reads/s (target)",
        "max gap ms",
        "never collected",
        "cores (each)",
        "cores (sum)",
        "single-replica cores",
        "largest / single",
        "alone: cores (each); largest / single; read p99 ms (each)",
        "RSS MiB (each)",
        "read p99 ms (each; floor)",
        "values held (each)",
        "push failures",
        "load",
        "budget",
      ],
      r.shard.map((x) => [
        x.shape ?? "queue",
        x.replicas,
        x.podsPerHpa ? `${x.hpas} x ${x.podsPerHpa} pods` : x.hpas,
        `${x.intervalSeconds} s`,
        `${x.collectionsPerSecond} (${x.targetCollectionsPerSecond})`,
        `${x.endpointReadsPerSecond} (${x.targetReadsPerSecond ?? x.targetCollectionsPerSecond})`,
        x.maxGapMs,
        x.neverCollected,
        each(x.perReplica, "cores"),
        x.coresSum,
        x.singleCores ?? "",
        x.replicas > 1 ? (x.maxCoresRatio ?? "") : "",
        x.aloneMaxCoresRatio === undefined
          ? ""
          : `${each(x.perReplica, "aloneCores")}; ${x.aloneMaxCoresRatio ?? ""}${
            x.perReplica[0]?.aloneReadP99Ms === undefined
              ? ""
              : `; ${each(x.perReplica, "aloneReadP99Ms")}`
          }`,
        each(x.perReplica, "rssMiB"),
        x.readP99Ms === undefined
          ? ""
          : `${each(x.perReplica, "readP99Ms")}${
            x.floorReadP99Ms === undefined ? "" : ` (${x.floorReadP99Ms})`
          }`,
        x.perReplica.map((p) => p.valuesHeld ?? p.storedExternal).join(" / "),
        x.replicas > 1 ? x.pushFailures : "",
        x.load1,
        mark(x.ok) + (x.ok ? "" : ` (${x.misses.join(", ")})`),
      ]),
    ));
    out.push("");
  }
  if (r.memory.length > 0) {
    out.push("### Memory (RSS MiB)\n");
    pointer("Memory");
    out.push(table(
      [
        "runtime",
        "mode",
        "HPAs",
        "RSS",
        "highest",
        "after serving load",
        "peak",
        "ready ms",
        "values served ms",
        "budget",
      ],
      r.memory.map((m) => [
        m.runtime,
        m.mode ?? "file",
        m.hpas,
        m.rssMiB,
        m.rssMaxMiB ?? "",
        m.rssAfterLoadMiB ?? "",
        m.peakMiB ?? "",
        m.readyMs ?? "",
        m.firstValuesMs ?? "",
        m.hpas === 2000 ? budgetMark(m.runtime, m.rssMiB < b.memoryMiBAt2000) : "",
      ]),
    ));
    out.push("");
  }
  if (r.startup.length > 0) {
    out.push("### Startup (process start to /readyz 200, ms)\n");
    out.push(table(
      ["runtime", "median", "min", "with HPAs (median)", "load", "budget"],
      r.startup.map((s) => [
        s.runtime,
        s.readyMsMedian,
        s.readyMsMin,
        `${s.readyMsWithHpasMedian} (${s.hpas})`,
        s.load1,
        s.runtime === "binary" ? mark(s.readyMsMedian < b.startupMs) : "",
      ]),
    ));
    out.push("");
  }
  out.push(`## Measured on their own

Runs made with \`--no-write\` (one section alone, another build or flag), written by hand: a
writing run keeps the text between the two marker lines below as it is.

${NOTES_START_MARKER}
${notes ?? NOTES_PLACEHOLDER}${NOTES_END_MARKER}
`);
  return out.join("\n");
}

/**
 * Write bench/README.md for `report`, keeping the notes of the README already there (if any).
 *
 * @param {string} file
 * @param {any} report
 */
export function writeReport(file, report) {
  let previous = null;
  try {
    previous = readFileSync(file, "utf8");
  } catch (e) {
    if (e?.code !== "ENOENT") throw e;
  }
  writeFileSync(file, renderReport(report, keptNotes(previous)));
}
