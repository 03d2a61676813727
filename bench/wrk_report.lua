-- wrk reporter: one JSON line (prefixed BENCHJSON) with the numbers bench/run.mjs reads.
-- With WRK_DELAY_MS set, each connection waits that long before each request (a paced load
-- for latency, instead of as many requests as the server can take).
local pause = tonumber(os.getenv("WRK_DELAY_MS") or "")
if pause then
  delay = function()
    return pause
  end
end

done = function(summary, latency, requests)
  io.write(string.format(
    'BENCHJSON {"requests":%d,"durationUs":%d,"bytes":%d,"errConnect":%d,"errRead":%d,' ..
    '"errWrite":%d,"errStatus":%d,"errTimeout":%d,"meanUs":%.1f,"p50Us":%d,"p90Us":%d,' ..
    '"p99Us":%d,"maxUs":%d}\n',
    summary.requests, summary.duration, summary.bytes, summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.status, summary.errors.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max))
end
