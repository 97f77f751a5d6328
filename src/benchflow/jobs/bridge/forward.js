// Inside the sandbox: listen on 127.0.0.1:PORT and forward every connection to the gateway's unix socket.
// Usage: node forward.js SOCKET PORT — prints "ready" once listening.
const net = require("net");
const [socketPath, port] = process.argv.slice(2);
net.createServer((client) => {
  const upstream = net.connect(socketPath);
  client.pipe(upstream);
  upstream.pipe(client);
  upstream.on("error", () => client.destroy());
  client.on("error", () => upstream.destroy());
}).listen(Number(port), "127.0.0.1", () => console.log("ready"));
