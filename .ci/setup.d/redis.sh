# redis-server for the shared breaker store's tests (breaker/fleet, e2e):
# the tests start their own servers on free loopback ports from this
# binary, so nothing is started here.
if ! command -v redis-server >/dev/null 2>&1; then
  echo "installing redis-server (breaker store tests)"
  apt_install redis-server
fi
# Debian's package starts a system service on 6379; the tests do not use it.
if command -v systemctl >/dev/null 2>&1; then systemctl stop redis-server >/dev/null 2>&1 || true; fi
redis-server --version
