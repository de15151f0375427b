// Preloaded into server-everything (node --require) so its HTTP server listens on 127.0.0.1
// only: a listen() given a port and no host gets the loopback host.
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if ((typeof args[0] === "number" || typeof args[0] === "string") &&
      (args.length < 2 || typeof args[1] !== "string")) {
    args.splice(1, 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
