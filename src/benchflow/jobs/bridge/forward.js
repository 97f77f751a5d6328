// Inside the sandbox: listen on 127.0.0.1 (a free port) and carry every connection to the gateway.
// Run as `node -e SOURCE MODE TARGET`; prints "ready PORT" once listening. Same modes and frames as
// forward.py: "unix SOCKET" relays to the mounted gateway socket; "stdio -" multiplexes over
// stdin/stdout (9-byte header !BII: kind 1 OPEN / 2 DATA / 3 CLOSE, connection id, payload length).
const net = require("net");
const [mode, target] = process.argv.slice(1);
const OPEN = 1, DATA = 2, CLOSE = 3;
const conns = new Map();
let nextId = 0;

function send(kind, id, data) {
  const head = Buffer.alloc(9);
  head.writeUInt8(kind, 0);
  head.writeUInt32BE(id, 1);
  head.writeUInt32BE(data ? data.length : 0, 5);
  process.stdout.write(data && data.length ? Buffer.concat([head, data]) : head);
}

function relay(client) {
  client.setNoDelay(true);
  const upstream = net.connect(target);
  client.pipe(upstream);
  upstream.pipe(client);
  upstream.on("error", () => client.destroy());
  client.on("error", () => upstream.destroy());
}

function multiplex(client) {
  client.setNoDelay(true);
  const id = ++nextId;
  conns.set(id, client);
  send(OPEN, id);
  client.on("data", (data) => send(DATA, id, data));
  const done = () => { if (conns.delete(id)) send(CLOSE, id); };
  client.on("end", done);
  client.on("error", done);
  client.on("close", done);
}

if (mode === "stdio") {
  let pending = Buffer.alloc(0);
  process.stdin.on("data", (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9) {
      const size = pending.readUInt32BE(5);
      if (pending.length < 9 + size) break;
      const kind = pending[0], id = pending.readUInt32BE(1), data = pending.slice(9, 9 + size);
      pending = pending.slice(9 + size);
      const client = conns.get(id);
      if (!client) continue;
      if (kind === DATA) client.write(data);
      else if (kind === CLOSE) { conns.delete(id); client.end(); }
    }
  });
  process.stdin.on("end", () => process.exit(0));
}

const server = net.createServer(mode === "stdio" ? multiplex : relay);
server.listen(0, "127.0.0.1", () => console.log(`ready ${server.address().port}`));
