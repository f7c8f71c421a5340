#!/usr/bin/env bash
# Runs a part of the test suite on Node 22 and Node 24 (the machine's node stays the one the whole
# suite runs on). Each version gets a copy of the committed tree (HEAD, as CI sees it: no
# node_modules, no dist, no uncommitted change) with the checkout's own packages (run `npm ci`
# first), better-sqlite3 compiled against the headers of the npm package the binary came from,
# and `npm run build`.
#
#   scripts/test-on-node.sh [prepare|test|all] [22] [24]     (default: all 22 24)
#
#   prepare  copy HEAD and the packages, compile better-sqlite3, check that the native modules
#            load, npm run build
#   test     the vitest subset below, then `npm start` answering /api/health (needs prepare)
#
# The binaries come from test/runtimes (`npm ci --prefix test/runtimes`), installed apart from the
# project so their `node` never shadows the machine's. The copies go to $NODE_VERSIONS_DIR/node22 …
# (default: service-node-versions-<a checksum of the checkout's path> in $TMPDIR or /tmp), which,
# like the binaries, must be readable by the satellite's sandbox user (uid 65534 when run as
# root): the satellite tests run node and the installed packages inside bubblewrap as that user.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNTIMES="$ROOT/test/runtimes/node_modules"
# One folder per checkout, so that two checkouts on one machine never share their copies.
BASE="${NODE_VERSIONS_DIR:-${TMPDIR:-/tmp}/service-node-versions-$(printf %s "$ROOT" | cksum | cut -d' ' -f1)}"

# The subset, chosen to cover what differs between Node versions at a few minutes of CI time:
# - the reference satellite: sandbox.test.ts (node and npx children in bubblewrap as another
#   user), sessions.test.ts (MCP over stdio and streamable HTTP, a process per client session,
#   resumable streams) and sealing.test.ts (HPKE on WebCrypto, X25519); the backend itself is
#   started below as `npm start` runs it;
# - test/db/database.test.ts: the database layer on both dialects, better-sqlite3 (a native module
#   built here for this node's ABI) and pg: migrations, transactions, a restart on a file;
# - test/accounts/login.test.ts: argon2 (the other native module, a prebuilt N-API binary):
#   hashing at registration, verifying at login, the dummy verify for unknown names.
# Then `npm start` itself: Node's own loader on the built code (vitest transforms the sources
# instead), and the V8 flags the start script passes, which a newer V8 could refuse.
# esbuild, rolldown and lightningcss (native binaries vitest uses) are exercised by vitest itself.
# The MCP conformance suite already runs on Node 22 (its CLI) in the main run. The whole suite
# stays on the machine's node: running it three times would not fit the CI budget.
SUBSET=(test/satellite/sandbox.test.ts test/satellite/sessions.test.ts test/satellite/sealing.test.ts test/db/database.test.ts test/accounts/login.test.ts)

phase=all
case "${1:-}" in
  prepare | test | all) phase=$1; shift ;;
esac
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(22 24)

say() { printf '\n== %s\n' "$*"; }
fail() {
  printf '\ntest-on-node: FAILED on Node %s: %s\n' "$version" "$*" >&2
  exit 1
}

# Every folder from / to $1 must let the sandbox user through, and $1 itself be readable.
check_sandbox_can_read() {
  [ "$(id -u)" = 0 ] || return 0
  setpriv --reuid=65534 --regid=65534 --clear-groups test -r "$1" \
    || fail "$1 is not readable by uid 65534 (the satellite's sandbox user): put it under a world-readable folder"
}

# Runs "$@" with this version's node first on PATH (npm and npx then run on it too).
on_node() {
  PATH="$nodedir/bin:$PATH" npm_config_nodedir="$nodedir" "$@"
}

# better-sqlite3 compiles SQLite itself (two minutes of one core) before its small V8 binding.
# With ccache on the machine (.ci/run installs it), SQLite's compiled objects are kept between
# builds: SQLite's C code includes no Node header, so the one compiled for the checkout's own
# install serves every version, and only the binding is compiled again. Paths are made relative
# to each build's folder (the same layout in the checkout and in a copy), so they match.
if command -v ccache >/dev/null; then
  export CC="ccache ${CC:-gcc}" CXX="ccache ${CXX:-g++}" CCACHE_BASEDIR=/ CCACHE_NOHASHDIR=true
fi

prepare() {
  local started=$SECONDS
  say "Node $version: copying HEAD to $copy"
  rm -rf "$copy"
  mkdir -p "$copy"
  chmod 755 "$BASE" "$copy"
  git -C "$ROOT" archive --format=tar HEAD | tar -x -C "$copy"
  check_sandbox_can_read "$copy/package.json"

  # The packages are the checkout's own install (`npm ci` from the same lockfile), linked file by
  # file: installing 600 packages again for each version would cost minutes of CPU and bring
  # nothing new, since they are plain JavaScript or N-API binaries that suit every version (argon2,
  # esbuild, rolldown, lightningcss). better-sqlite3 is the exception: a V8-ABI module, so it is a
  # real copy, compiled again for this version. The copy's own writes (dist/, caches) never reach
  # the checkout's node_modules: vitest's cache folder is left out, and nothing else is written there.
  say "Node $version: the checkout's packages, better-sqlite3 compiled for this version"
  [ -d "$ROOT/node_modules/better-sqlite3" ] || fail "no $ROOT/node_modules: run npm ci first"
  # Hard links need one file system; across two, a full copy (600 MB) does the same.
  cp -al "$ROOT/node_modules" "$copy/node_modules" 2>/dev/null \
    || { rm -rf "$copy/node_modules"; cp -a "$ROOT/node_modules" "$copy/node_modules"; }
  rm -rf "$copy/node_modules/.vite" "$copy/node_modules/.cache" "$copy/node_modules/better-sqlite3"
  cp -a "$ROOT/node_modules/better-sqlite3" "$copy/node_modules/better-sqlite3"
  rm -rf "$copy/node_modules/better-sqlite3/build"
  # Always from source: prebuild-install would otherwise try GitHub first, and whether that is
  # reachable must not change what is tested. It reads this file in the folders above the package
  # (npm_config_build_from_source would do too, but npm warns about a config it does not know, and
  # a variable named prebuild-install_… never arrives: the shell npm runs install scripts with
  # drops names with a dash).
  printf '{ "buildFromSource": true }\n' >"$copy/.prebuild-installrc"
  (cd "$copy" && on_node npm rebuild better-sqlite3 --no-audit --no-fund) \
    || fail "better-sqlite3 did not build (it compiles against this node's headers in $nodedir/include/node)"
  local installed=$SECONDS

  (cd "$copy" && on_node node --input-type=module -e "
    import Database from 'better-sqlite3'
    import argon2 from 'argon2'
    const sqlite = new Database(':memory:').prepare('select sqlite_version() as v').get().v
    const hash = await argon2.hash('probe', { type: argon2.argon2id, memoryCost: 19456, timeCost: 2, parallelism: 1 })
    if (!(await argon2.verify(hash, 'probe')) || (await argon2.verify(hash, 'other'))) throw new Error('argon2 verifies wrongly')
    console.log('node ' + process.version + ' (ABI ' + process.versions.modules + '): better-sqlite3 with SQLite ' + sqlite + ', argon2 hashes and verifies')
  ") || fail "a native module does not load (better-sqlite3 or argon2)"

  say "Node $version: npm run build"
  (cd "$copy" && on_node npm run -s build) || fail "npm run build failed"
  echo "Node $version prepared in $((SECONDS - started)) s (packages and better-sqlite3 $((installed - started)) s)"
}

# `npm start` as a user runs it, on SQLite in the copy's data folder: it must answer /api/health
# and /api/health/ready, then stop with exit code 0 when the server gets SIGTERM.
start_and_stop() {
  local log="$copy/start.log" group line="" url server code=0
  : >"$log"
  # A process group of its own (setsid without a fork: its pid is the group's), to end it whole.
  (cd "$copy" && PORT=0 HOST=127.0.0.1 exec setsid env PATH="$nodedir/bin:$PATH" npm start >"$log" 2>&1) &
  group=$!
  for _ in $(seq 1 600); do
    line=$(grep -m 1 'Server listening at' "$log" || true)
    [ -n "$line" ] && break
    kill -0 "$group" 2>/dev/null || break
    sleep 0.2
  done
  abort() {
    kill -KILL -- "-$group" 2>/dev/null || true
    cat "$log" >&2
    fail "$1"
  }
  [ -n "$line" ] || abort "npm start did not listen within 120 s"
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' <<<"$line")
  server=$(grep -o '"pid":[0-9]*' <<<"$line" | cut -d: -f2)
  on_node node --input-type=module -e "
    const answer = async (path) => { const r = await fetch('$url' + path); if (r.status !== 200) throw new Error(path + ' answered ' + r.status); return r.json() }
    const [live] = await Promise.all([answer('/api/health'), answer('/api/health/ready')])
    console.log('npm start on Node ' + process.version + ': /api/health and /api/health/ready answer 200, version ' + live.data.version)
  " || abort "npm start does not answer /api/health"
  # SIGTERM to the server itself, as a process manager sends it; npm then exits with its code.
  kill -TERM "$server"
  wait "$group" || code=$?
  [ "$code" = 0 ] || abort "npm start exited with $code after SIGTERM"
}

run_tests() {
  local started=$SECONDS
  [ -d "$copy/node_modules" ] && [ -d "$copy/dist" ] || fail "$copy is not prepared: run $0 prepare $version first"
  say "Node $version: vitest run ${SUBSET[*]}"
  (cd "$copy" && on_node npx vitest run "${SUBSET[@]}") || fail "tests failed (see above)"
  say "Node $version: npm start"
  start_and_stop
  echo "Node $version tested in $((SECONDS - started)) s"
}

one_version() {
  nodedir="$RUNTIMES/node$version"
  [ -x "$nodedir/bin/node" ] || fail "no $nodedir/bin/node: run npm ci --prefix test/runtimes (it installs node22 and node24)"
  nodedir=$(cd "$nodedir" && pwd -P)
  check_sandbox_can_read "$nodedir/bin/node"
  copy="$BASE/node$version"
  case $phase in
    prepare) prepare ;;
    test) run_tests ;;
    all) prepare; run_tests ;;
  esac
}

# Each version in a subshell of its own, so that one failing still lets the next one run.
failed=()
for version in "${versions[@]}"; do
  set +e
  (set -e; one_version)
  status=$?
  set -e
  [ "$status" = 0 ] || failed+=("$version")
done
if [ ${#failed[@]} -gt 0 ]; then
  printf '\ntest-on-node: %s failed on Node %s (of %s)\n' "$phase" "${failed[*]}" "${versions[*]}" >&2
  exit 1
fi
printf '\ntest-on-node: %s passed on Node %s\n' "$phase" "${versions[*]}"
