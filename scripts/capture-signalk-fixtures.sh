#!/usr/bin/env bash
# Regenerates the Signal K fixtures of signalk/testdata from real
# signalk-server processes: installs the pinned server if need be
# (scripts/signalk.sh), then runs internal/sktest/capture, which starts one
# server per scenario and saves what it answers. Takes a few minutes.
#
#   bash scripts/capture-signalk-fixtures.sh [capture flags, e.g. -only both,priorities]
#
# Environment: SOURCECATALOG_SIGNALK_SERVER, as for scripts/test.sh.
set -euo pipefail

cd "$(dirname "$0")/.."
# shellcheck source=scripts/signalk.sh
source scripts/signalk.sh

if [[ -z ${SOURCECATALOG_SIGNALK_SERVER:-} ]]; then
  sk_install
fi
GOWORK=off go run ./internal/sktest/capture -out signalk/testdata "$@"
