# Sourced by .ci/run (and usable by hand: `source .ci/postgres.sh`): installs PostgreSQL from
# Debian's packages when missing (unless HERMES_PG_NO_INSTALL is set: `cargo xtask ci` sets it
# when the user declined), starts a throwaway cluster on loopback port 55432 with TLS
# (a CA and a server certificate made here for 127.0.0.1/localhost), creates the `hermes` role
# and the `hermes_test` database, and exports
#   HERMES_TEST_PG_URL  postgres://hermes:…@127.0.0.1:55432/hermes_test
#   HERMES_TEST_PG_CA   the CA file (for sslmode=verify-full tests)
#   HERMES_REQUIRE_PG=1 (tests that need the server fail, never skip)
#   HERMES_TEST_PG_BIN  the PostgreSQL binaries (initdb, pg_ctl), for tests that run a cluster
#                       of their own to stop and start (hermes-serve's store_away)
# The cluster is stopped and removed by `hermes_pg_stop` (set as an EXIT trap by .ci/run).
# The recipe (a throwaway cluster on its own port: initdb, start and createdb take about a second;
# PID 1 is not systemd here, so nothing starts the server but this script) was measured on the CI
# machine kind.

PGBIN=""
for v in 17 16 15; do
  if [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then PGBIN="/usr/lib/postgresql/$v/bin"; break; fi
done
if [ -z "$PGBIN" ] && [ -n "${HERMES_PG_NO_INSTALL:-}" ]; then
  echo "PostgreSQL is not installed, and installing it was declined (cargo xtask ci --yes, or CI=1, installs it)" >&2
  return 1
fi
if [ -z "$PGBIN" ]; then
  echo "postgres.sh: installing Debian's postgresql with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq postgresql postgresql-client openssl >/dev/null
  for v in 17 16 15; do
    if [ -x "/usr/lib/postgresql/$v/bin/pg_ctl" ]; then PGBIN="/usr/lib/postgresql/$v/bin"; break; fi
  done
fi
[ -n "$PGBIN" ] || { echo "PostgreSQL could not be installed" >&2; return 1; }

HERMES_PGDATA=$(mktemp -d /tmp/hermes-pgdata.XXXXXX)
HERMES_PGTLS=$(mktemp -d /tmp/hermes-pgtls.XXXXXX)
HERMES_PGPORT=${HERMES_PGPORT:-55432}

# A CA and a server certificate signed by it, for 127.0.0.1 and localhost.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=hermes test CA" \
  -keyout "$HERMES_PGTLS/ca.key" -out "$HERMES_PGTLS/ca.pem" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
  -keyout "$HERMES_PGTLS/server.key" -out "$HERMES_PGTLS/server.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$HERMES_PGTLS/san.ext"
openssl x509 -req -in "$HERMES_PGTLS/server.csr" -CA "$HERMES_PGTLS/ca.pem" -CAkey "$HERMES_PGTLS/ca.key" \
  -CAcreateserial -days 2 -extfile "$HERMES_PGTLS/san.ext" -out "$HERMES_PGTLS/server.pem" 2>/dev/null
chmod 600 "$HERMES_PGTLS/server.key"

if [ "$(id -u)" = 0 ]; then
  chown postgres "$HERMES_PGDATA" "$HERMES_PGTLS/server.key" "$HERMES_PGTLS/server.pem"
  hermes_as_pg() { su postgres -s /bin/sh -c "$1"; }
else
  hermes_as_pg() { sh -c "$1"; }
fi
chmod 700 "$HERMES_PGDATA"
chmod 755 "$HERMES_PGTLS"

hermes_as_pg "$PGBIN/initdb -D $HERMES_PGDATA -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8" >/dev/null
# Password authentication on TCP (the tests prove a password reaches no output), trust on the
# socket for the set-up below.
cat > "$HERMES_PGDATA/pg_hba.conf" <<HBA
local all all trust
host  all postgres 127.0.0.1/32 trust
host  all all 127.0.0.1/32 scram-sha-256
HBA
hermes_as_pg "$PGBIN/pg_ctl -D $HERMES_PGDATA -l $HERMES_PGDATA/server.log -w -o \"-h 127.0.0.1 -p $HERMES_PGPORT -k $HERMES_PGDATA -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c ssl=on -c ssl_cert_file=$HERMES_PGTLS/server.pem -c ssl_key_file=$HERMES_PGTLS/server.key\" start" >/dev/null

psql -q -h 127.0.0.1 -p "$HERMES_PGPORT" -U postgres -v ON_ERROR_STOP=1 \
  -c "CREATE ROLE hermes LOGIN PASSWORD 'hermes-ci-secret'" \
  -c "CREATE DATABASE hermes_test OWNER hermes" >/dev/null

export HERMES_TEST_PG_URL="postgres://hermes:hermes-ci-secret@127.0.0.1:$HERMES_PGPORT/hermes_test"
export HERMES_TEST_PG_CA="$HERMES_PGTLS/ca.pem"
export HERMES_REQUIRE_PG=1
export HERMES_TEST_PG_BIN="$PGBIN"

hermes_pg_stop() {
  hermes_as_pg "$PGBIN/pg_ctl -D $HERMES_PGDATA -m immediate -w stop" >/dev/null 2>&1 || true
  rm -rf "$HERMES_PGDATA" "$HERMES_PGTLS"
}
