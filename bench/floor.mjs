// The floor: a bare HTTPS server (node:https, run by the runtime under test) that answers each
// benchmarked path with the exact bytes the adapter answered, so that the difference is the
// adapter's own work per request.
//
// usage: RUNTIME bench/floor.mjs CERT KEY PORT RESPONSES.json [CLIENT_CA]
// With CLIENT_CA it does what any server that authenticates clients by certificate must: it
// asks each client for a certificate, verifies it against that bundle and reads it (once per
// connection). On Bun that takes a node:tls server feeding a node:http server, as in the
// adapter (src/runtime/serve.ts): Bun's node:https and Bun.serve verify a client certificate
// but do not show it to the handler.
// prints `{"ready":true,"port":P}` once listening.
import { readFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:https";
import { createServer as createTlsServer } from "node:tls";

const [certFile, keyFile, port, responsesFile, clientCaFile] = process.argv.slice(2);
const responses = new Map(
  Object.entries(JSON.parse(readFileSync(responsesFile, "utf8"))).map(([path, r]) => [
    path,
    { status: r.status, headers: r.headers, body: Buffer.from(r.body, "utf8") },
  ]),
);
const peers = new WeakMap();
const handler = (req, res) => {
  if (clientCaFile && !peers.has(req.socket)) {
    peers.set(req.socket, req.socket.getPeerCertificate(true));
  }
  const r = responses.get(req.url);
  if (!r) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(r.status, { ...r.headers, "content-length": String(r.body.length) });
  res.end(r.body);
};
const tlsOptions = {
  cert: readFileSync(certFile),
  key: readFileSync(keyFile),
  ...(clientCaFile
    ? { ca: readFileSync(clientCaFile), requestCert: true, rejectUnauthorized: false }
    : {}),
};
let server;
if (clientCaFile && globalThis.Bun !== undefined) {
  const http = createHttpServer(handler);
  server = createTlsServer(tlsOptions, (socket) => http.emit("connection", socket));
} else {
  server = createServer(tlsOptions, handler);
}
server.listen(Number(port), "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ ready: true, port: server.address().port }) + "\n");
});
process.on("SIGTERM", () => process.exit(0));
