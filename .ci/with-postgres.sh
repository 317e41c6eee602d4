#!/usr/bin/env bash
# Runs "$@" beside a throwaway PostgreSQL cluster (.ci/postgres.sh: installed from Debian's
# packages when missing, on loopback with TLS; HERMES_TEST_PG_URL and friends exported), and
# stops and removes the cluster when the command ends. `cargo xtask ci` uses it.
# Exit code 97: PostgreSQL could not be provisioned (the command did not run); otherwise the
# command's own exit code.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=.ci/postgres.sh
if ! source .ci/postgres.sh || [ -z "${HERMES_TEST_PG_URL:-}" ]; then
  echo "with-postgres: PostgreSQL could not be provisioned" >&2
  exit 97
fi
trap hermes_pg_stop EXIT
"$@"
