#!/usr/bin/env bash
# Throwaway three-node MariaDB Galera cluster on loopback, for the
# multi-master tests of mysqlstore.
#
# Sourced by scripts/test.sh for its functions, or run directly:
#
#   bash scripts/galera.sh start   # prints `export SOURCECATALOG_GALERA_DSNS=...`
#   bash scripts/galera.sh stop    # stops every node by pid, removes its state
#
# Each node runs as the mysql user (rsync state transfer fails when the
# server runs as root), with --no-defaults, its own client port, socket,
# gmcast.listen_addr, ist.recv_addr and SST receive address, ROW binlog
# format, innodb_autoinc_lock_mode=2 and small buffer pool and gcache. The
# first node bootstraps the cluster with --wsrep-new-cluster. Each node, its
# mariadb-install-db and its state transfer scripts use DIR/nodeN/tmp, owned
# by mysql, as their temp directory (--tmpdir and TMPDIR), never the
# caller's TMPDIR, which mysql need not be able to write; mysql must only be
# able to reach DIR.
#
# DIR/nodeN/start.sh restarts node N so that it rejoins the cluster, and
# DIR/nodeN/mariadbd.pid holds its pid: tests that kill a node use them
# through SOURCECATALOG_GALERA_DIR.

# shellcheck source=scripts/mariadb.sh
source "$(dirname "${BASH_SOURCE[0]}")/mariadb.sh"

GALERA_STATE_DIR="${TMPDIR:-/tmp}/sourcecatalog-galera"
GALERA_NODES=3
GALERA_PROVIDER=/usr/lib/galera/libgalera_smm.so

galera_log() { printf 'galera: %s\n' "$*" >&2; }

# galera_install installs the Galera provider and rsync (the state transfer
# method) unless present, after mdb_install.
galera_install() {
  mdb_install || return 1
  if [[ -r $GALERA_PROVIDER ]] && command -v rsync wsrep_sst_rsync >/dev/null; then
    return 0
  fi
  galera_log "installing galera-4 and rsync with apt-get"
  {
    apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends galera-4 rsync
  } >&2
}

# galera_base_port prints a base port B such that B+1..B+3 (clients) and
# B+100..B+132 (group communication, IST, SST) are free. The ports stay
# below the kernel's ephemeral range (32768 and up by default): a node that
# rejoins binds its IST listener again, and a port in that range may by
# then be the local end of some client connection, which makes the node
# abort ("Failed to open IST listener ... Address already in use").
galera_base_port() {
  local base=${GALERA_PORT:-24300} p ok
  while ((base + 132 < 32768)); do
    ok=1
    for p in $((base + 1)) $((base + 2)) $((base + 3)) $((base + 110)) $((base + 111)) $((base + 112)) \
      $((base + 120)) $((base + 121)) $((base + 122)) $((base + 130)) $((base + 131)) $((base + 132)); do
      if mdb_port_in_use "$p"; then ok=0; break; fi
    done
    if ((ok)); then echo "$base"; return 0; fi
    base=$((base + 200))
  done
  galera_log "no free port range"
  return 1
}

# galera_write_node DIR N BASE: write DIR/nodeN/start.sh, which starts node N
# in the background (pass --wsrep-new-cluster to bootstrap) and records its
# pid in DIR/nodeN/mariadbd.pid.
galera_write_node() {
  local dir=$1 n=$2 base=$3 server node members
  server=$(mdb_find_server) || return 1
  node="$dir/node$n"
  members="gcomm://127.0.0.1:$((base + 110 + 1)),127.0.0.1:$((base + 110 + 2)),127.0.0.1:$((base + 110 + 3))"
  cat >"$node/start.sh" <<SH
#!/usr/bin/env bash
# Starts galera node $n in the background; extra arguments go to mariadbd.
# The node and the state transfer scripts it runs write temp files in
# $node/tmp, which mysql owns, whatever TMPDIR the caller has.
cd "$node"
export TMPDIR="$node/tmp"
"$server" --no-defaults \\
  --user=mysql \\
  --datadir="$node/data" \\
  --tmpdir="$node/tmp" \\
  --socket="$node/mysqld.sock" \\
  --pid-file="$node/server.pid" \\
  --log-error="$node/error.log" \\
  --bind-address=127.0.0.1 \\
  --port=$((base + n)) \\
  --skip-name-resolve \\
  --character-set-server=utf8mb4 \\
  --collation-server=utf8mb4_general_ci \\
  --default-storage-engine=InnoDB \\
  --binlog-format=ROW \\
  --innodb-autoinc-lock-mode=2 \\
  --innodb-buffer-pool-size=48M \\
  --innodb-log-file-size=32M \\
  --innodb-flush-log-at-trx-commit=2 \\
  --wsrep-on=ON \\
  --wsrep-provider=$GALERA_PROVIDER \\
  --wsrep-cluster-name=sourcecatalog_test \\
  --wsrep-cluster-address="$members" \\
  --wsrep-node-name=node$n \\
  --wsrep-node-address=127.0.0.1:$((base + 110 + n)) \\
  --wsrep-node-incoming-address=127.0.0.1:$((base + n)) \\
  --wsrep-provider-options="gmcast.listen_addr=tcp://127.0.0.1:$((base + 110 + n));ist.recv_addr=127.0.0.1:$((base + 120 + n));gcache.size=32M;evs.suspect_timeout=PT3S;evs.inactive_timeout=PT6S;evs.install_timeout=PT5S" \\
  --wsrep-sst-method=rsync \\
  --wsrep-sst-receive-address=127.0.0.1:$((base + 130 + n)) \\
  "\$@" </dev/null >>"$node/error.log" 2>&1 &
echo \$! >"$node/mariadbd.pid"
SH
  chmod 755 "$node/start.sh"
  echo "$((base + n))" >"$node/port"
}

# galera_wait_synced DIR N: wait up to 90 s until node N is Synced.
galera_wait_synced() {
  local dir=$1 n=$2 node i state pid
  node="$dir/node$n"
  for ((i = 0; i < 180; i++)); do
    state=$(mariadb --no-defaults --socket="$node/mysqld.sock" -uroot -N -B \
      -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2)
    [[ $state == Synced ]] && return 0
    pid=$(<"$node/mariadbd.pid")
    if ! mdb_alive "$pid"; then
      galera_log "node $n (pid $pid) died; tail of its error log:"
      tail -n 40 "$node/error.log" >&2
      return 1
    fi
    sleep 0.5
  done
  galera_log "node $n is not synced after 90 s (state '$state'); tail of its error log:"
  tail -n 40 "$node/error.log" >&2
  return 1
}

# galera_start DIR: initialise and start three nodes under DIR, bootstrap,
# create the sourcecatalog user, wait for a synced cluster of 3. Exports
# SOURCECATALOG_GALERA_DSNS (comma-separated, one DSN per node) and
# SOURCECATALOG_GALERA_DIR.
galera_start() {
  local dir=$1 base n node dsns=()
  base=$(galera_base_port) || return 1
  chmod 755 "$dir"
  for ((n = 1; n <= GALERA_NODES; n++)); do
    node="$dir/node$n"
    mkdir -p "$node/data" "$node/tmp"
    chown -R mysql:mysql "$node"
    if ! runuser -u mysql -- test -w "$node/tmp"; then
      galera_log "the mysql user cannot write $node/tmp: it must be able to search every directory above it; start the cluster under a directory it can reach (TMPDIR is ${TMPDIR:-unset})"
      return 1
    fi
    if ! TMPDIR="$node/tmp" mariadb-install-db --no-defaults --datadir="$node/data" --user=mysql \
      --tmpdir="$node/tmp" --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
      >"$node/install-db.log" 2>&1; then
      galera_log "mariadb-install-db failed for node $n:"
      tail -n 30 "$node/install-db.log" >&2
      return 1
    fi
    chown -R mysql:mysql "$node"
    galera_write_node "$dir" "$n" "$base" || return 1
  done

  galera_log "bootstrapping node 1"
  bash "$dir/node1/start.sh" --wsrep-new-cluster
  galera_wait_synced "$dir" 1 || return 1
  mariadb --no-defaults --socket="$dir/node1/mysqld.sock" -uroot <<SQL || return 1
CREATE USER '$MDB_USER'@'127.0.0.1' IDENTIFIED BY '$MDB_PASSWORD';
CREATE USER '$MDB_USER'@'localhost' IDENTIFIED BY '$MDB_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$MDB_USER'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$MDB_USER'@'localhost' WITH GRANT OPTION;
SQL
  for ((n = 2; n <= GALERA_NODES; n++)); do
    galera_log "starting node $n"
    bash "$dir/node$n/start.sh"
    galera_wait_synced "$dir" "$n" || return 1
  done
  local size
  size=$(mariadb --no-defaults --socket="$dir/node1/mysqld.sock" -uroot -N -B \
    -e "SHOW STATUS LIKE 'wsrep_cluster_size'" | cut -f2)
  if [[ $size != "$GALERA_NODES" ]]; then
    galera_log "cluster size is $size, want $GALERA_NODES"
    return 1
  fi
  for ((n = 1; n <= GALERA_NODES; n++)); do
    dsns+=("$MDB_USER:$MDB_PASSWORD@tcp(127.0.0.1:$(<"$dir/node$n/port"))/")
  done
  SOURCECATALOG_GALERA_DSNS=$(IFS=,; echo "${dsns[*]}")
  export SOURCECATALOG_GALERA_DSNS
  export SOURCECATALOG_GALERA_DIR=$dir
  galera_log "cluster of $GALERA_NODES synced: $SOURCECATALOG_GALERA_DSNS"
}

# galera_stop DIR: stop every node recorded under DIR by its pid.
galera_stop() {
  local dir=$1 n pid
  for ((n = GALERA_NODES; n >= 1; n--)); do
    [[ -r "$dir/node$n/mariadbd.pid" ]] || continue
    pid=$(<"$dir/node$n/mariadbd.pid")
    if mdb_alive "$pid"; then
      galera_log "stopping node $n (pid $pid)"
      mdb_stop_pid "$pid" || true
    fi
  done
}

galera_main() {
  set -euo pipefail
  local dir=$GALERA_STATE_DIR
  case "${1:-}" in
  start)
    galera_install
    galera_stop "$dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    galera_start "$dir" || { galera_stop "$dir"; return 1; }
    echo "export SOURCECATALOG_GALERA_DSNS='$SOURCECATALOG_GALERA_DSNS'"
    echo "export SOURCECATALOG_GALERA_DIR='$dir'"
    ;;
  stop)
    galera_stop "$dir"
    rm -rf "$dir"
    ;;
  *)
    echo "usage: $0 start|stop" >&2
    return 2
    ;;
  esac
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  galera_main "$@"
fi
