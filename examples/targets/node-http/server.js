// node-http: the seed articles' Node server. The `http` module in one process, the delay a
// setTimeout (the event loop serves other requests meanwhile).
//
//   node server.js HOST PORT DELAY_MS
'use strict';
const http = require('http');

const [host, portArg, delayArg] = process.argv.slice(2);
if (host === undefined || portArg === undefined || delayArg === undefined) {
  console.error('usage: node server.js HOST PORT DELAY_MS');
  process.exit(2);
}
const port = Number(portArg);
const delayMs = Number(delayArg);
const body = 'Have Fun ~ Tester !';
const headers = {'Content-Type': 'text/plain', 'Content-Length': Buffer.byteLength(body)};

const server = http.createServer((req, res) => {
  const reply = () => {
    res.writeHead(200, headers);
    res.end(body);
  };
  if (delayMs > 0) setTimeout(reply, delayMs);
  else reply();
});
server.listen(port, host, () => {
  console.error(`node-http listening on ${host}:${port} (delay ${delayMs} ms)`);
});
