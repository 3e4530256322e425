#!/usr/bin/env bash
# The programs the tests of package deploy run (deploy/*_test.go):
# promtool, from Debian's prometheus package, checks and unit-tests the
# alert rules and parses the dashboard's queries; nginx runs the ingress
# recipe in front of serve; systemd-analyze, from Debian's systemd
# package, verifies the agent's unit and rates its hardening (it reads
# unit files only: no running systemd is needed).
#
# Sourced by scripts/test.sh for its function, or run directly:
#
#   bash scripts/deploytools.sh install
#
# Under CI=true a test that cannot find its program fails; elsewhere it is
# skipped.

# shellcheck source=scripts/mariadb.sh
source "$(dirname "${BASH_SOURCE[0]}")/mariadb.sh" # apt_install_no_services

dt_log() { printf 'deploytools: %s\n' "$*" >&2; }

# dt_missing prints the Debian packages whose programs are not found.
dt_missing() {
  command -v promtool >/dev/null 2>&1 || echo prometheus
  command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx ]] || echo nginx
  command -v systemd-analyze >/dev/null 2>&1 || echo systemd
}

# dt_install installs the packages of the missing programs from apt, if
# any. Both packages would start a system service (prometheus on :9090,
# nginx on :80); a policy-rc.d that exits 101 forbids that, as
# mdb_install does. An existing policy-rc.d is left alone; one we create
# is removed again afterwards. The tests run their own nginx, and never a
# prometheus server.
dt_install() {
  local missing
  missing=$(dt_missing | tr '\n' ' ')
  missing=${missing% }
  if [[ -z $missing ]]; then
    return 0
  fi
  if [[ $(id -u) -ne 0 ]]; then
    dt_log "not installed and we are not root: $missing; install them"
    return 1
  fi
  dt_log "installing $missing with apt-get"
  # shellcheck disable=SC2086 # one word per package
  apt_install_no_services $missing
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -euo pipefail
  case ${1:-} in
  install) dt_install ;;
  *)
    echo "usage: bash scripts/deploytools.sh install" >&2
    exit 2
    ;;
  esac
fi
