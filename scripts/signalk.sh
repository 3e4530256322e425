#!/usr/bin/env bash
# signalk-server for the sourcecatalog test suite (internal/sktest).
#
# Sourced by scripts/test.sh for its functions, or run directly:
#
#   bash scripts/signalk.sh install   # prints `export SOURCECATALOG_SIGNALK_SERVER=...`
#   bash scripts/signalk.sh path      # prints the executable's path if installed
#
# The server is the npm package pinned by internal/sktest/testdata/signalk-server
# (package.json with its overrides, and the package-lock.json npm generated
# from it). sk_install installs it with `npm ci` into a cache directory outside
# the checkout, keyed by the sha256 of those two files,
#
#   ${XDG_CACHE_HOME:-$HOME/.cache}/sourcecatalog/signalk-server-<hash>
#
# so a rerun on the same machine skips the install, and exports
# SOURCECATALOG_SIGNALK_SERVER, the path of its node_modules/.bin/signalk-server
# executable. The tests start servers themselves (internal/sktest): on
# loopback ports of their own, with temporary configuration directories.
#
# npm runs with --ignore-scripts: of the packages with install scripts, none
# is needed by a server playing files (a CAN socket addon, a serial port
# binding that ships prebuilt binaries, a React Native shim, and banners), and
# one (@scarf/scarf) would report the install over the network.
#
# Node and npm come from the distribution (apt-get install nodejs npm) when
# either is missing. signalk-server 2.32.0 asks for Node 22 or later; it warns
# but runs on Node 20 (Debian 13's, or NodeSource's), and does not run on
# Node 18 (Debian 12's: its undici needs the File global of Node 20), so
# sk_install refuses a Node older than SK_NODE_MIN.

SK_PKG_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/internal/sktest/testdata/signalk-server"

SK_NODE_MIN=20

sk_log() { printf 'signalk: %s\n' "$*" >&2; }

# sk_cache_dir prints the install directory for the pinned package files.
sk_cache_dir() {
  local hash
  hash=$(cat "$SK_PKG_DIR/package.json" "$SK_PKG_DIR/package-lock.json" | sha256sum) || return 1
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/sourcecatalog/signalk-server-${hash:0:16}"
}

# SK_BIN is the executable's path inside an install directory.
SK_BIN=node_modules/.bin/signalk-server

# sk_install_node installs nodejs and npm with apt-get unless both are
# already on PATH, then checks that node is at least SK_NODE_MIN.
sk_install_node() {
  local major
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [[ $(id -u) -ne 0 ]]; then
      sk_log "node or npm is missing and we are not root; install nodejs and npm, or set SOURCECATALOG_SIGNALK_SERVER"
      return 1
    fi
    sk_log "installing nodejs and npm with apt-get"
    {
      apt-get update -q &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm
    } >&2 || return 1
  fi
  major=$(node -p 'process.versions.node.split(".")[0]') || return 1
  if ((major < SK_NODE_MIN)); then
    sk_log "node $(node --version) is too old: signalk-server 2.32.0 needs Node $SK_NODE_MIN or later (Debian 12 ships 18; Debian 13 ships 20); install a newer nodejs, or set SOURCECATALOG_SIGNALK_SERVER"
    return 1
  fi
}

# sk_install: install the pinned signalk-server unless the cache has it, and
# export SOURCECATALOG_SIGNALK_SERVER. The install goes to a temporary
# directory renamed into place when complete, so an interrupted install is
# never taken for a finished one.
sk_install() {
  local dir tmp start
  dir=$(sk_cache_dir) || return 1
  # The server runs on the node on PATH, so check it even when cached.
  sk_install_node || return 1
  if [[ ! -x $dir/$SK_BIN ]]; then
    mkdir -p "$(dirname "$dir")" || return 1
    tmp=$(mktemp -d "$dir.tmp.XXXXXX") || return 1
    cp "$SK_PKG_DIR/package.json" "$SK_PKG_DIR/package-lock.json" "$tmp/" || return 1
    sk_log "npm ci into $dir (node $(node --version), npm $(npm --version))"
    start=$SECONDS
    if ! (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2; then
      sk_log "npm ci failed"
      rm -rf "$tmp"
      return 1
    fi
    # Another run may have finished first; its install is as good as ours.
    if ! mv -T "$tmp" "$dir" 2>/dev/null; then
      rm -rf "$tmp"
    fi
    sk_log "installed in $((SECONDS - start)) s"
  fi
  if [[ ! -x $dir/$SK_BIN ]]; then
    sk_log "no signalk-server executable in $dir"
    return 1
  fi
  export SOURCECATALOG_SIGNALK_SERVER="$dir/$SK_BIN"
  sk_log "SOURCECATALOG_SIGNALK_SERVER=$SOURCECATALOG_SIGNALK_SERVER"
}

sk_main() {
  set -euo pipefail
  local dir
  case "${1:-}" in
  install)
    sk_install
    echo "export SOURCECATALOG_SIGNALK_SERVER='$SOURCECATALOG_SIGNALK_SERVER'"
    ;;
  path)
    dir=$(sk_cache_dir)
    if [[ -x $dir/$SK_BIN ]]; then
      echo "$dir/$SK_BIN"
    else
      echo "not installed (bash $0 install)" >&2
      return 3
    fi
    ;;
  *)
    echo "usage: $0 install|path" >&2
    return 2
    ;;
  esac
}

# Run the CLI only when executed, not when sourced.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  sk_main "$@"
fi
