// Preloaded into a server that listens on PORT=0 and logs the port it asked for, not the one it
// got: prints the real one so a test can connect to it.
const net = require('node:net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once('listening', () => {
    const address = this.address();
    if (address && typeof address === 'object') process.stderr.write(`LISTENING_PORT=${address.port}\n`);
  });
  return listen.apply(this, args);
};
