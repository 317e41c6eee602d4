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
# A cluster that did not start is no cluster: check it answers before running anything.
if ! PGSSLMODE=disable psql -q -At "$HERMES_TEST_PG_URL" -c 'SELECT 1' >/dev/null 2>&1; then
  echo "with-postgres: the PostgreSQL cluster did not start (pg_ctl says why above)" >&2
  exit 97
fi
"$@"
