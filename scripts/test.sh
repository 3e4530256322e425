#!/usr/bin/env bash
# Full test suite: the one command CI and developers run.
#
#   bash scripts/test.sh [extra go test args, e.g. -run Foo -v]
#
# Environment:
#   SOURCECATALOG_MYSQL_DSN  use this server instead of provisioning a
#                            throwaway MariaDB (go-sql-driver DSN, no database,
#                            e.g. 'user:pass@tcp(127.0.0.1:3306)/');
#                            SOURCECATALOG_MYSQL_DIR names the scripts/mariadb.sh
#                            directory of that server for the test that stops
#                            and restarts it (exported for the throwaway one)
#   SOURCECATALOG_GALERA_DSNS  use this three-node Galera cluster instead of
#                            provisioning one (comma-separated DSNs, one per
#                            node); SOURCECATALOG_GALERA_DIR names the
#                            scripts/galera.sh directory for the node-kill test
#   SOURCECATALOG_SIGNALK_SERVER  use this signalk-server executable instead of
#                            installing the pinned one (scripts/signalk.sh)
#   SOURCECATALOG_SKIP_FUZZ  set to 1 to skip the fuzz smoke step
#   FUZZTIME                 per fuzz target (default 200000x, about ten
#                            seconds each here). A count, not a duration: with
#                            a duration, go test can fail a target with
#                            "context deadline exceeded" when the deadline
#                            races a worker (golang/go#75804)
#   MARIADB_PORT             first port to try for the throwaway server (33306)
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/galera.sh
source scripts/galera.sh # also sources scripts/mariadb.sh
# shellcheck source=scripts/signalk.sh
source scripts/signalk.sh
# shellcheck source=scripts/deploytools.sh
source scripts/deploytools.sh

step() { printf '\n==> %s\n' "$*"; }

MDB_DIR=
MDB_PID=
GALERA_DIR=
SK_PID=
SK_OUT=
# kill_tree PID: terminate PID and every process below it (npm's children).
kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [[ -n $SK_PID ]]; then
    kill_tree "$SK_PID"
    wait "$SK_PID" 2>/dev/null || true
  fi
  if [[ -n $SK_OUT ]]; then rm -rf "$SK_OUT"; fi
  if [[ -n $GALERA_DIR ]]; then
    step "stopping the Galera cluster"
    galera_stop "$GALERA_DIR" || rc=1
    rm -rf "$GALERA_DIR"
  fi
  if [[ -n $MDB_PID ]]; then
    step "stopping throwaway MariaDB (pid $MDB_PID)"
    mdb_stop_pid "$MDB_PID" || rc=1
  fi
  if [[ -n $MDB_DIR ]]; then
    mdb_stop "$MDB_DIR" || rc=1 # a test that restarted it left another pid
    rm -rf "$MDB_DIR"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One module: the library, its stores and the command.
step "go mod download"
go mod download

# Packages first, one apt-get after another (they share dpkg's lock); then
# the signalk-server install, which is npm fetching and unpacking, runs in
# the background while gofmt, vet, the build and the database servers'
# start-up use the CPU. Its output is shown when the tests need it.
if [[ -z ${SOURCECATALOG_MYSQL_DSN:-} ]]; then
  step "installing MariaDB"
  mdb_install
fi
if [[ -z ${SOURCECATALOG_GALERA_DSNS:-} ]]; then
  step "installing Galera"
  galera_install
fi
step "installing promtool and nginx when missing (package deploy's tests)"
dt_install
if [[ -z ${SOURCECATALOG_SIGNALK_SERVER:-} ]]; then
  step "installing the pinned signalk-server (in the background)"
  sk_install_node
  SK_OUT=$(mktemp -d "${TMPDIR:-/tmp}/sourcecatalog-signalk.XXXXXX")
  (sk_install && printf '%s\n' "$SOURCECATALOG_SIGNALK_SERVER" >"$SK_OUT/path") >"$SK_OUT/log" 2>&1 &
  SK_PID=$!
fi

step "gofmt -l"
# git may refuse to work (e.g. "dubious ownership" in CI); fall back to find.
if ! gofiles=$(git ls-files -co --exclude-standard '*.go' 2>/dev/null); then
  gofiles=$(find . -name '*.go' -not -path './.git/*' -not -path './vendor/*')
fi
files=()
while IFS= read -r f; do
  [[ -f $f ]] && files+=("$f") # skip tracked-but-deleted files
done <<<"$gofiles"
if ((${#files[@]})); then
  unformatted=$(gofmt -l "${files[@]}")
  if [[ -n $unformatted ]]; then
    echo "these files need gofmt -w:" >&2
    echo "$unformatted" >&2
    exit 1
  fi
fi

step "go vet ./..."
go vet ./...

if [[ -z ${SOURCECATALOG_MYSQL_DSN:-} ]]; then
  step "provisioning throwaway MariaDB"
  MDB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sourcecatalog-test.XXXXXX")
  mdb_start "$MDB_DIR" # sets MDB_PID, exports SOURCECATALOG_MYSQL_DSN
  export SOURCECATALOG_MYSQL_DIR=$MDB_DIR
else
  step "using SOURCECATALOG_MYSQL_DSN from the environment"
fi

if [[ -z ${SOURCECATALOG_GALERA_DSNS:-} ]]; then
  step "provisioning a throwaway three-node Galera cluster"
  GALERA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/sourcecatalog-galera.XXXXXX")
  galera_start "$GALERA_DIR" # exports SOURCECATALOG_GALERA_DSNS and _DIR
else
  step "using SOURCECATALOG_GALERA_DSNS from the environment"
fi

if [[ -n $SK_PID ]]; then
  step "waiting for the signalk-server install"
  sk_rc=0
  wait "$SK_PID" || sk_rc=$?
  SK_PID=
  cat "$SK_OUT/log" >&2
  if ((sk_rc != 0)) || [[ ! -s $SK_OUT/path ]]; then
    echo "the signalk-server install failed (exit $sk_rc)" >&2
    exit 1
  fi
  SOURCECATALOG_SIGNALK_SERVER=$(<"$SK_OUT/path")
  export SOURCECATALOG_SIGNALK_SERVER
else
  step "using SOURCECATALOG_SIGNALK_SERVER from the environment"
fi

step "go test -race -count=1 -timeout 25m${*:+ $*} ./..."
go test -race -count=1 -timeout 25m "$@" ./...

if [[ ${SOURCECATALOG_SKIP_FUZZ:-} == 1 ]]; then
  step "fuzz smoke skipped (SOURCECATALOG_SKIP_FUZZ=1)"
  exit 0
fi
# Only packages with test files can have fuzz targets.
mapfile -t testpkgs < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...)
for pkg in "${testpkgs[@]}"; do
  [[ -n $pkg ]] || continue
  targets=$(go test -list '^Fuzz' "$pkg" | grep -E '^Fuzz' || true)
  for name in $targets; do
    step "fuzz $pkg $name for ${FUZZTIME:-200000x}"
    go test -run '^$' -fuzz "^${name}\$" -fuzztime "${FUZZTIME:-200000x}" "$pkg"
  done
done

step "all tests passed"
