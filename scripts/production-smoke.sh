#!/usr/bin/env bash
# Proves the production build runs from dist/ with production dependencies only: builds, copies
# what the Dockerfile's final stage holds (dist/, package.json, package-lock.json) into an empty
# directory, installs there with `npm ci --omit=dev`, runs the compiled migrate command, starts
# the server from dist/, asks for readiness, the docs page's init script and the console, and stops it with SIGTERM.
#
#   scripts/production-smoke.sh                       # on the embedded database
#   DATABASE_URL=postgres://… scripts/production-smoke.sh   # on a fresh database of that server
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

npm run -s build
work=$(mktemp -d "${TMPDIR:-/tmp}/cp-production-XXXXXX")
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

cp -r dist package.json package-lock.json "$work/"
cd "$work"
npm ci --omit=dev --no-audit --no-fund --ignore-scripts --loglevel=error
if [ -d node_modules/@nestjs/cli ] || [ -d node_modules/typescript ] || [ -d node_modules/@swc-node ]; then
  echo "production install holds a dev dependency" >&2; exit 1
fi

export PORT=0 HOST=127.0.0.1 DATA_DIR="$work/.data" LOG_LEVEL=info
if [ -n "${DATABASE_URL:-}" ]; then
  db="prod_smoke_$(date +%s)_$$"
  base="$DATABASE_URL"
  node -e "const {Client}=require(process.cwd()+'/node_modules/pg');const c=new Client(process.argv[1]);c.connect().then(()=>c.query('CREATE DATABASE $db')).then(()=>c.end())" "$base"
  DATABASE_URL="${base%/*}/$db"
  export DATABASE_URL PLATFORM_ADMIN_TOKEN="cpa_smoke_$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')"
  # A deployment on PostgreSQL must bring its secrets key (the server refuses to start without one).
  export SECRETS_KEY="$(head -c 32 /dev/urandom | base64)"
  drop() { node -e "const {Client}=require(process.cwd()+'/node_modules/pg');const c=new Client(process.argv[1]);c.connect().then(()=>c.query('DROP DATABASE IF EXISTS $db WITH (FORCE)')).then(()=>c.end())" "$base" || true; }
  trap 'drop; cleanup' EXIT
fi

echo "== compiled migrate =="
npm run -s migrate

# What `npm run start:prod` and the Dockerfile run, without npm in between: npm does not pass
# SIGTERM on to the server, and the graceful stop is part of what is checked.
echo "== node dist/src/main.js =="
node dist/src/main.js > server.log 2>&1 &
server_pid=$!
url=""
for _ in $(seq 1 240); do
  url=$(sed -n 's/.*listening on \(http:\/\/[0-9.]*:[0-9]*\).*/\1/p' server.log | head -1)
  [ -n "$url" ] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then cat server.log >&2; echo "the server exited" >&2; exit 1; fi
  sleep 0.5
done
[ -n "$url" ] || { cat server.log >&2; echo "the server did not start" >&2; exit 1; }
node -e "
(async () => {
  for (const path of ['/health/ready', '/api/docs', '/api/docs/swagger-ui-init.js', '/api/docs-json', '/console']) {
    const r = await fetch(process.argv[1] + path);
    if (r.status !== 200) throw new Error(path + ' answered ' + r.status);
    if (path.endsWith('.js')) new (require('vm').Script)(await r.text());
    console.log(path, r.status);
  }
})().catch((e) => { console.error(e.message); process.exit(1); });" "$url"
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=""
grep -q "\"msg\":\"stopped\"" server.log || { cat server.log >&2; echo "no graceful stop" >&2; exit 1; }
echo "production build: OK ($root)"
