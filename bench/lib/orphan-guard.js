// Preloaded (`node -r`) into every server a benchmark starts. If the benchmark process dies
// without stopping its servers (killed, crashed), the server notices it has a new parent and
// stops itself the ordinary way, so no run leaves a server behind. It only reads process.ppid.
const parent = process.ppid;
const timer = setInterval(() => {
  if (process.ppid !== parent) {
    clearInterval(timer);
    process.kill(process.pid, 'SIGTERM');
    // A server that ignores SIGTERM is cut after a grace period.
    setTimeout(() => process.exit(1), 15000).unref();
  }
}, 500);
timer.unref();
