// The floor: a bare HTTPS server (node:https, run by the runtime under test) that answers each
// benchmarked path with the exact bytes the adapter answered, so that the difference is the
// adapter's own work per request.
//
// usage: RUNTIME bench/floor.mjs CERT KEY PORT RESPONSES.json
// prints `{"ready":true,"port":P}` once listening.
import { readFileSync } from "node:fs";
import { createServer } from "node:https";

const [certFile, keyFile, port, responsesFile] = process.argv.slice(2);
const responses = new Map(
  Object.entries(JSON.parse(readFileSync(responsesFile, "utf8"))).map(([path, r]) => [
    path,
    { status: r.status, headers: r.headers, body: Buffer.from(r.body, "utf8") },
  ]),
);
const server = createServer(
  { cert: readFileSync(certFile), key: readFileSync(keyFile) },
  (req, res) => {
    const r = responses.get(req.url);
    if (!r) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(r.status, { ...r.headers, "content-length": String(r.body.length) });
    res.end(r.body);
  },
);
server.listen(Number(port), "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ ready: true, port: server.address().port }) + "\n");
});
process.on("SIGTERM", () => process.exit(0));
