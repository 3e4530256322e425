#!/usr/bin/env bash
# Throwaway MariaDB server for the sourcecatalog test suite.
#
# Sourced by scripts/test.sh for its functions, or run directly:
#
#   bash scripts/mariadb.sh start    # prints `export SOURCECATALOG_MYSQL_DSN=...`
#   bash scripts/mariadb.sh stop     # stops the server by pid, removes its state
#   bash scripts/mariadb.sh status
#
# CLI mode keeps its state (datadir, socket, pid file, logs) in
# ${TMPDIR:-/tmp}/sourcecatalog-mariadb. The server listens on 127.0.0.1 only,
# on the first free port from ${MARIADB_PORT:-33306}, and has a user
# sourcecatalog/sourcecatalog with ALL PRIVILEGES ON *.* WITH GRANT OPTION.
# It runs with --no-defaults, so nothing in /etc/mysql is read or touched.
# The server and mariadb-install-db use a temp directory of their own,
# DIR/tmp (--tmpdir and TMPDIR), owned by the user they run as: they never
# write to the caller's TMPDIR, which that user need not be able to write.

MDB_USER=sourcecatalog
MDB_PASSWORD=sourcecatalog
MDB_STATE_DIR="${TMPDIR:-/tmp}/sourcecatalog-mariadb"

mdb_log() { printf 'mariadb: %s\n' "$*" >&2; }

# mdb_find_server prints the path of mariadbd, or fails.
mdb_find_server() {
  if command -v mariadbd >/dev/null 2>&1; then
    command -v mariadbd
  elif [[ -x /usr/sbin/mariadbd ]]; then
    echo /usr/sbin/mariadbd
  else
    return 1
  fi
}

# mdb_install installs mariadb-server (which pulls in mariadb-client) from
# apt unless the server and client programs are already present. The Debian
# package would normally start a system mariadb on :3306; a policy-rc.d that
# exits 101 forbids that. An existing policy-rc.d (Docker images ship one) is
# left alone; one we create is removed again afterwards.
mdb_install() {
  if mdb_find_server >/dev/null &&
    command -v mariadb-install-db mariadb-admin mariadb >/dev/null; then
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    mdb_log "mariadb-server is not installed and we are not root; install it or set SOURCECATALOG_MYSQL_DSN"
    return 1
  fi
  mdb_log "installing mariadb-server with apt-get"
  apt_install_no_services mariadb-server mariadb-client
}

# apt_install_no_services PKG...: apt-get update and install the packages,
# their output on stderr (CLI stdout is only the export line), without
# letting them start a system service: a policy-rc.d that exits 101
# forbids that. An existing policy-rc.d (Docker images ship one) is left
# alone; one we create is removed again afterwards.
apt_install_no_services() {
  local policy=/usr/sbin/policy-rc.d own_policy=0 rc=0
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    own_policy=1
  fi
  {
    apt-get update -q &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
  } >&2 || rc=$?
  if ((own_policy)); then rm -f "$policy"; fi
  return "$rc"
}

# mdb_port_in_use PORT: true if something accepts connections on 127.0.0.1:PORT.
mdb_port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# mdb_free_port prints the first port from ${MARIADB_PORT:-33306} that nobody
# listens on.
mdb_free_port() {
  local port=${MARIADB_PORT:-33306} last
  last=$((port + 200))
  while ((port < last)); do
    if ! mdb_port_in_use "$port"; then
      echo "$port"
      return 0
    fi
    port=$((port + 1))
  done
  mdb_log "no free port in ${MARIADB_PORT:-33306}..$last"
  return 1
}

# mdb_alive PID: true if PID is a live (non-zombie) mariadbd process.
mdb_alive() {
  local pid=$1 comm stat
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
  comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
  [[ $comm == mariadbd ]] || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }     # fields after "(comm) "
  [[ ${stat%% *} != Z ]] # state field; Z = zombie, already dead
}

# mdb_start DIR: create a fresh datadir under DIR, start mariadbd and wait for
# it, create the sourcecatalog user. DIR must exist and be empty-ish (whatever
# is in DIR/data is wiped). On success sets MDB_PID, MDB_PORT and exports
# SOURCECATALOG_MYSQL_DSN; DIR/mariadbd.pid and DIR/port record the server.
# On failure the server (if any) is stopped and the error log tail printed.
mdb_start() {
  local dir=$1 server osuser port attempt i
  server=$(mdb_find_server) || {
    mdb_log "mariadbd not found (run mdb_install)"
    return 1
  }
  osuser=$(id -un)
  rm -rf "$dir/data" "$dir/tmp"
  mkdir -p "$dir/data" "$dir/tmp"

  # --auth-root-authentication-method=normal: root@localhost with an empty
  # password, so the setup below works regardless of unix_socket auth.
  mdb_log "initialising datadir $dir/data"
  if ! TMPDIR="$dir/tmp" mariadb-install-db --no-defaults --datadir="$dir/data" --user="$osuser" \
    --tmpdir="$dir/tmp" --auth-root-authentication-method=normal --skip-test-db --skip-name-resolve \
    >"$dir/install-db.log" 2>&1; then
    mdb_log "mariadb-install-db failed:"
    tail -n 30 "$dir/install-db.log" >&2
    return 1
  fi

  # Pick a free port and start; retry a couple of times if someone grabbed the
  # port between the probe and the bind. Sourcing DIR/start.sh keeps the
  # server a child of this shell.
  MDB_PID=
  for attempt in 1 2 3; do
    port=$(mdb_free_port) || return 1
    : >"$dir/error.log"
    mdb_write_start "$dir" "$server" "$osuser" "$port"
    # shellcheck source=/dev/null
    . "$dir/start.sh"
    MDB_PID=$(<"$dir/mariadbd.pid")
    echo "$port" >"$dir/port"

    # Wait up to 60 s for it to answer on the socket.
    for ((i = 0; i < 120; i++)); do
      if mariadb-admin --no-defaults --socket="$dir/mysqld.sock" -uroot \
        --connect-timeout=2 ping >/dev/null 2>&1; then
        break 2
      fi
      mdb_alive "$MDB_PID" || break
      sleep 0.5
    done
    if mdb_alive "$MDB_PID"; then
      mdb_log "mariadbd (pid $MDB_PID) did not answer within 60 s; tail of $dir/error.log:"
      tail -n 40 "$dir/error.log" >&2
      mdb_stop_pid "$MDB_PID"
      return 1
    fi
    wait "$MDB_PID" 2>/dev/null || true
    if grep -qiE 'address already in use|do you already have another' "$dir/error.log" && ((attempt < 3)); then
      mdb_log "port $port was taken, retrying"
      continue
    fi
    mdb_log "mariadbd exited during startup; tail of $dir/error.log:"
    tail -n 40 "$dir/error.log" >&2
    return 1
  done

  if ! mariadb --no-defaults --socket="$dir/mysqld.sock" -uroot <<SQL; then
CREATE USER '$MDB_USER'@'127.0.0.1' IDENTIFIED BY '$MDB_PASSWORD';
CREATE USER '$MDB_USER'@'localhost' IDENTIFIED BY '$MDB_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO '$MDB_USER'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO '$MDB_USER'@'localhost' WITH GRANT OPTION;
SQL
    mdb_log "creating user $MDB_USER failed"
    mdb_stop_pid "$MDB_PID"
    return 1
  fi

  MDB_PORT=$port
  export SOURCECATALOG_MYSQL_DSN="$MDB_USER:$MDB_PASSWORD@tcp(127.0.0.1:$MDB_PORT)/"
  mdb_log "mariadbd pid $MDB_PID listening on 127.0.0.1:$MDB_PORT (socket $dir/mysqld.sock)"
}

# mdb_write_start DIR SERVER OSUSER PORT: write DIR/start.sh, which starts
# SERVER on DIR's datadir and PORT in the background, as OSUSER, and records
# its pid in DIR/mariadbd.pid. mdb_start sources it; a test that stops the
# server and starts it again (SOURCECATALOG_MYSQL_DIR) runs it with bash,
# then waits for the server to answer. It sets no variable in the shell
# that sources it.
mdb_write_start() {
  local dir=$1 server=$2 osuser=$3 port=$4
  cat >"$dir/start.sh" <<SH
#!/usr/bin/env bash
# Starts the throwaway mariadbd of $dir on 127.0.0.1:$port in the background.
TMPDIR="$dir/tmp" "$server" --no-defaults \\
  --user="$osuser" \\
  --datadir="$dir/data" \\
  --tmpdir="$dir/tmp" \\
  --socket="$dir/mysqld.sock" \\
  --pid-file="$dir/server.pid" \\
  --log-error="$dir/error.log" \\
  --bind-address=127.0.0.1 \\
  --port="$port" \\
  --skip-name-resolve \\
  --skip-log-bin \\
  --innodb-buffer-pool-size=64M \\
  --innodb-log-file-size=48M \\
  --innodb-flush-log-at-trx-commit=2 \\
  --character-set-server=utf8mb4 \\
  --collation-server=utf8mb4_general_ci \\
  </dev/null >>"$dir/error.log" 2>&1 &
echo \$! >"$dir/mariadbd.pid"
SH
  chmod 755 "$dir/start.sh"
}

# mdb_stop_pid PID: SIGTERM, wait up to 30 s, then SIGKILL. Only ever signals
# PID, and only if it still is a mariadbd process.
mdb_stop_pid() {
  local pid=$1 i
  mdb_alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do
    mdb_alive "$pid" || break
    sleep 0.5
  done
  if mdb_alive "$pid"; then
    mdb_log "mariadbd pid $pid ignored SIGTERM for 30 s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  # Reap it if it is our child (test.sh mode); harmless otherwise.
  wait "$pid" 2>/dev/null || true
  ! mdb_alive "$pid"
}

# mdb_stop DIR: stop the server recorded in DIR/mariadbd.pid.
mdb_stop() {
  local dir=$1 pid=
  [[ -r "$dir/mariadbd.pid" ]] && pid=$(<"$dir/mariadbd.pid")
  if [[ -n $pid ]] && mdb_alive "$pid"; then
    mdb_log "stopping mariadbd pid $pid"
    mdb_stop_pid "$pid"
  fi
}

mdb_main() {
  set -euo pipefail
  local dir=$MDB_STATE_DIR pid port
  case "${1:-}" in
  start)
    if [[ -r "$dir/mariadbd.pid" ]] && mdb_alive "$(<"$dir/mariadbd.pid")"; then
      mdb_log "already running"
    else
      mdb_install
      rm -rf "$dir"
      mkdir -p "$dir"
      mdb_start "$dir"
    fi
    pid=$(<"$dir/mariadbd.pid")
    port=$(<"$dir/port")
    echo "export SOURCECATALOG_MYSQL_DSN='$MDB_USER:$MDB_PASSWORD@tcp(127.0.0.1:$port)/'"
    echo "# pid file: $dir/mariadbd.pid (pid $pid); stop with: bash $0 stop"
    ;;
  stop)
    mdb_stop "$dir"
    rm -rf "$dir"
    ;;
  status)
    if [[ -r "$dir/mariadbd.pid" ]] && mdb_alive "$(<"$dir/mariadbd.pid")"; then
      echo "running: pid $(<"$dir/mariadbd.pid"), port $(<"$dir/port")"
    else
      echo "not running"
      return 3
    fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    return 2
    ;;
  esac
}

# Run the CLI only when executed, not when sourced.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  mdb_main "$@"
fi
