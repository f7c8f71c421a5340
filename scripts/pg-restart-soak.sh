#!/usr/bin/env bash
# A real PostgreSQL restart under load, by hand (not part of `npm test`: restarting the cluster
# would break the test files that share it).
#
# Starts the built server (`node dist/src/server.js`) on a fresh database of the cluster, puts a
# steady load on it (logins, GET /api/users/me, GET /api/health/ready, GET /api/health, team reads,
# team updates, team creations, registrations), restarts PostgreSQL in the middle with
# $PG_RESTART, and prints what every request got, second by second and in total. Then it checks
# that the same server process recovered (ready 200, login, an authenticated call, a write that
# reads back), that it exits 0 on SIGTERM, and drops the database.
#
# Passes (exit 0) when: every answer of a database route was a 2xx or 503 DATABASE_UNAVAILABLE,
# /api/health answered 200 throughout, no request failed on the client side (reset, timeout) or
# took longer than 10 s, and the recovery checks passed.
#
#   scripts/pg-restart-soak.sh
#
# Environment (defaults in brackets):
#   ADMIN_URL      a superuser URL of the cluster [postgres://postgres@127.0.0.1:5432/postgres]
#   PG_RESTART     the restart command [pg_ctlcluster --skip-systemctl-redirect <version> main restart]
#   SOAK_SECONDS   length of the load [20]
#   RESTART_AT     seconds into the load when PostgreSQL is restarted [5]
#   RESTARTS       how many restarts, RESTART_EVERY seconds apart [1]
#   RESTART_EVERY  [6]
#   PORT           the server's port on 127.0.0.1 [3999]
#   SKIP_BUILD=1   use dist/ as it is instead of running `npm run build`
#
# Example against a throw-away cluster instead of the shared one:
#   ADMIN_URL=postgres://postgres@127.0.0.1:5433/postgres \
#   PG_RESTART="su postgres -c '/usr/lib/postgresql/15/bin/pg_ctl -D /tmp/soak/data -l /tmp/soak/log restart -m fast'" \
#   scripts/pg-restart-soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ADMIN_URL="${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
PG_RESTART="${PG_RESTART:-pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql | sort -V | tail -1) main restart}"
PORT="${PORT:-3999}"
export SOAK_SECONDS="${SOAK_SECONDS:-20}" RESTART_AT="${RESTART_AT:-5}" RESTARTS="${RESTARTS:-1}" RESTART_EVERY="${RESTART_EVERY:-6}" PG_RESTART

[ "${SKIP_BUILD:-}" = 1 ] || npm run build --silent

DB="svc_soak_$(date +%s)_$$"
DATA_DIR="$(mktemp -d)"
LOG="$DATA_DIR/server.log"
psql "$ADMIN_URL" -qAt -c "create database $DB" >/dev/null
DB_URL="$(node -e 'const u = new URL(process.argv[1]); u.pathname = "/" + process.argv[2]; console.log(u.toString())' "$ADMIN_URL" "$DB")"

SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID" 2>/dev/null || true; fi
  for _ in $(seq 1 30); do pg_isready -d "$ADMIN_URL" -q && break; sleep 1; done
  psql "$ADMIN_URL" -qAt -c "drop database if exists $DB with (force)" >/dev/null || echo "could not drop database $DB" >&2
  rm -rf "$DATA_DIR"
}
trap cleanup EXIT

env -i PATH="$PATH" PORT="$PORT" HOST=127.0.0.1 DATA_DIR="$DATA_DIR" DATABASE_URL="$DB_URL" \
  ENCRYPTION_SECRET="soak-$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" \
  RATE_LIMIT_ENABLED=false LOG_LEVEL=warn \
  node dist/src/server.js >"$LOG" 2>&1 &
SERVER_PID=$!
export BASE_URL="http://127.0.0.1:$PORT"
for _ in $(seq 1 100); do
  curl -fsS "$BASE_URL/api/health/ready" >/dev/null 2>&1 && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$LOG"; echo "the server did not start" >&2; exit 1; }
  sleep 0.2
done
echo "server pid $SERVER_PID on $BASE_URL, database $DB; restart with: $PG_RESTART"

set +e
node --input-type=module - <<'EOF'
import http from 'node:http'
import { spawn } from 'node:child_process'

const base = process.env.BASE_URL
const seconds = Number(process.env.SOAK_SECONDS)
const restartAt = Number(process.env.RESTART_AT)
const restarts = Number(process.env.RESTARTS)
const restartEvery = Number(process.env.RESTART_EVERY)
const BOUND_MS = 10_000
const PASSWORD = 'soak password 123'

function send(agent, method, path, body, cookie) {
  const startedAt = Date.now()
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body))
  const headers = {}
  if (payload) Object.assign(headers, { 'content-type': 'application/json', 'content-length': payload.length })
  if (cookie) headers.cookie = cookie
  return new Promise((resolve) => {
    let done = false
    const finish = (result) => {
      if (done) return
      done = true
      clearTimeout(timer)
      resolve({ startedAt, ms: Date.now() - startedAt, ...result })
    }
    const request = http.request(new URL(path, base), { method, agent, headers }, (response) => {
      const chunks = []
      response.on('data', (chunk) => chunks.push(chunk))
      response.on('error', (error) => finish({ error: error.code ?? error.message }))
      response.on('end', () => {
        let parsed
        try { parsed = JSON.parse(Buffer.concat(chunks).toString()) } catch {}
        const cookiePair = (response.headers['set-cookie'] ?? []).find((line) => line.startsWith('auth_session='))?.split(';')[0]
        finish({ status: response.statusCode, code: parsed?.code, body: parsed, cookie: cookiePair })
      })
    })
    const timer = setTimeout(() => { finish({ error: 'TIMEOUT' }); request.destroy() }, BOUND_MS)
    request.on('error', (error) => finish({ error: error.code ?? error.message }))
    request.end(payload)
  })
}

const plain = new http.Agent({ keepAlive: false })
const admin = await send(plain, 'POST', '/api/auth/email/register', { username: 'soakadmin', email: 'soakadmin@example.com', password: PASSWORD })
if (admin.status !== 201) { console.error('could not register the admin', admin); process.exit(1) }
const cookie = admin.cookie
await send(plain, 'PUT', '/api/settings/team.creation_limit', { value: 10000 }, cookie)
const team = await send(plain, 'POST', '/api/teams', { name: 'Soak' }, cookie)
const teamId = team.body.data.team.id

const workers = [
  ['health', () => ['GET', '/api/health']],
  ['ready', () => ['GET', '/api/health/ready']],
  ['login', () => ['POST', '/api/auth/email/login', { login: 'soakadmin', password: PASSWORD }]],
  ['me', () => ['GET', '/api/users/me', undefined, cookie]],
  ['me', () => ['GET', '/api/users/me', undefined, cookie]],
  ['team read', () => ['GET', `/api/teams/${teamId}`, undefined, cookie]],
  ['team update', (n) => ['PUT', `/api/teams/${teamId}`, { description: `d${n}` }, cookie]],
  ['team create', (n) => ['POST', '/api/teams', { name: `Soak ${n}` }, cookie]],
  ['register', (n) => ['POST', '/api/auth/email/register', { username: `soak_${n}`, email: `soak_${n}@example.com`, password: PASSWORD }]],
]

const began = Date.now()
const outcomes = []
const restartLog = []
let stop = false
const running = workers.map(async ([label, next]) => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  for (let n = 0; !stop; n++) {
    const [method, path, body, withCookie] = next(n)
    const outcome = await send(agent, method, path, body, withCookie)
    outcomes.push({ label, ...outcome })
    if (outcome.error) await new Promise((resolve) => setTimeout(resolve, 50))
  }
  agent.destroy()
})

function restart() {
  return new Promise((resolve) => {
    const at = Date.now()
    const child = spawn('sh', ['-c', process.env.PG_RESTART], { stdio: 'inherit' })
    child.on('exit', (code) => {
      restartLog.push({ from: at - began, to: Date.now() - began, code })
      resolve()
    })
  })
}
const restarting = (async () => {
  await new Promise((resolve) => setTimeout(resolve, restartAt * 1000))
  for (let i = 0; i < restarts; i++) {
    await restart()
    if (i < restarts - 1) await new Promise((resolve) => setTimeout(resolve, restartEvery * 1000))
  }
})()
await new Promise((resolve) => setTimeout(resolve, seconds * 1000))
await restarting
stop = true
await Promise.all(running)

const key = (o) => (o.error ? `error ${o.error}` : `${o.status}${o.code ? ` ${o.code}` : ''}`)
const tally = (items, by) => items.reduce((counts, item) => ((counts[by(item)] = (counts[by(item)] ?? 0) + 1), counts), {})
console.log('restarts (ms into the load):', JSON.stringify(restartLog))
console.log('second by second:')
for (let second = 0; second <= seconds; second++) {
  const inSecond = outcomes.filter((o) => Math.floor((o.startedAt - began) / 1000) === second)
  if (inSecond.length > 0) console.log(`  ${String(second).padStart(3)} s  ${JSON.stringify(tally(inSecond, key))}`)
}
console.log('by route:')
for (const [label, counts] of Object.entries(tally(outcomes, (o) => o.label)).map(([label]) => [label, tally(outcomes.filter((o) => o.label === label), key)])) {
  console.log(`  ${label.padEnd(12)} ${JSON.stringify(counts)}`)
}
const maxMs = Math.max(...outcomes.map((o) => o.ms))
console.log(`requests: ${outcomes.length}, max latency ${maxMs} ms`)

const problems = []
for (const o of outcomes) {
  if (o.error) problems.push(`${o.label}: client error ${o.error}`)
  else if (o.label === 'health' && o.status !== 200) problems.push(`health answered ${o.status}`)
  else if (!(o.status >= 200 && o.status < 300) && !(o.status === 503 && o.code === 'DATABASE_UNAVAILABLE')) problems.push(`${o.label}: ${o.status} ${JSON.stringify(o.body)}`)
}
if (maxMs >= BOUND_MS) problems.push(`a request took ${maxMs} ms`)

// Recovery of the same process.
let ready
for (const t0 = Date.now(); Date.now() - t0 < 30_000; await new Promise((resolve) => setTimeout(resolve, 200))) {
  ready = await send(plain, 'GET', '/api/health/ready')
  if (ready.status === 200) break
}
const login = await send(plain, 'POST', '/api/auth/email/login', { login: 'soakadmin', password: PASSWORD })
const me = await send(plain, 'GET', '/api/users/me', undefined, login.cookie)
const write = await send(plain, 'PUT', `/api/teams/${teamId}`, { description: 'after the restart' }, login.cookie)
const read = await send(plain, 'GET', `/api/teams/${teamId}`, undefined, login.cookie)
const recovered = ready?.status === 200 && login.status === 200 && me.status === 200 && write.status === 200 && read.body?.data?.team?.description === 'after the restart'
console.log(`recovery: ready ${ready?.status}, login ${login.status}, me ${me.status}, write ${write.status}, read back ${read.body?.data?.team?.description === 'after the restart'}`)
if (!recovered) problems.push('the service did not recover')
if (restartLog.some((r) => r.code !== 0)) problems.push('the restart command failed')

const unique = [...new Set(problems)]
console.log(unique.length === 0 ? 'PASS' : `FAIL:\n  ${unique.slice(0, 30).join('\n  ')}`)
process.exit(unique.length === 0 ? 0 : 1)
EOF
LOAD_STATUS=$?
set -e

set +e
if kill -TERM "$SERVER_PID" 2>/dev/null; then
  wait "$SERVER_PID"
  EXIT_CODE=$?
  echo "server exit code on SIGTERM: $EXIT_CODE"
else
  wait "$SERVER_PID"
  echo "the server process had already exited (code $?) before the SIGTERM"
  EXIT_CODE=gone
fi
set -e
SERVER_PID=
echo "warnings and errors the server logged: $(grep -c '"level":[4-6]0' "$LOG" || true)"
if [ "$LOAD_STATUS" != 0 ] || [ "$EXIT_CODE" != 0 ]; then
  echo "the server's last errors:"
  grep '"level":[5-6]0' "$LOG" | tail -5 | cut -c1-600
fi
[ "$LOAD_STATUS" = 0 ] && [ "$EXIT_CODE" = 0 ]
