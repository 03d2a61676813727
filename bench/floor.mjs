// The floor: a bare HTTPS server (node:https, run by the runtime under test) that answers each
// benchmarked path with the exact bytes the adapter answered, so that the difference is the
// adapter's own work per request.
//
// usage: RUNTIME bench/floor.mjs CERT KEY PORT RESPONSES.json [CLIENT_CA]
// With CLIENT_CA it does what any server that authenticates clients by certificate must: it
// asks each client for a certificate, verifies it against that bundle and reads it (once per
// connection). On Bun that takes a node:tls server, as in the adapter (src/runtime/serve.ts):
// Bun's node:https and Bun.serve verify a client certificate but do not show it to the
// handler. Its sockets get the least HTTP/1.1 a server can do: find each head's end, read its
// request line and header lines into strings, write the answer's head and body in one write
// (the adapter parses them with src/runtime/http1_parser.ts, stricter and with bodies).
// prints `{"ready":true,"port":P}` once listening.
import { readFileSync } from "node:fs";
import { STATUS_CODES } from "node:http";
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
  server = createTlsServer(tlsOptions, (socket) => {
    peers.set(socket, socket.getPeerCertificate(true));
    socket.on("error", () => {});
    let held = null;
    socket.on("data", (chunk) => {
      let buf = held === null ? chunk : Buffer.concat([held, chunk]);
      held = null;
      let at = 0;
      for (;;) {
        const end = buf.indexOf("\r\n\r\n", at, "latin1");
        if (end < 0) break;
        const lines = buf.toString("latin1", at, end).split("\r\n");
        at = end + 4;
        const headers = {};
        for (let i = 1; i < lines.length; i++) {
          const colon = lines[i].indexOf(":");
          headers[lines[i].slice(0, colon).toLowerCase()] = lines[i].slice(colon + 1).trim();
        }
        const url = lines[0].split(" ")[1];
        const r = responses.get(url);
        const status = r ? r.status : 404;
        let head = `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n`;
        if (r) { for (const [k, v] of Object.entries(r.headers)) head += `${k}: ${v}\r\n`; }
        const body = r ? r.body : Buffer.alloc(0);
        head += `content-length: ${body.length}\r\ndate: ${new Date().toUTCString()}\r\n\r\n`;
        socket.write(Buffer.concat([Buffer.from(head, "latin1"), body]));
      }
      if (at < buf.length) held = buf.subarray(at);
    });
  });
} else {
  server = createServer(tlsOptions, handler);
}
server.listen(Number(port), "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ ready: true, port: server.address().port }) + "\n");
});
process.on("SIGTERM", () => process.exit(0));
