# BIND's named for the DNS-01 end-to-end test (e2e/acme_dns_test.go): the
# test runs its own named in the foreground on a loopback port, with a
# zone that takes TSIG-signed dynamic updates (RFC 2136), so nothing is
# started here. Debian's package enables a system service on port 53; the
# test does not use it.
if ! command -v named >/dev/null 2>&1 && [ ! -x /usr/sbin/named ]; then
  echo "installing bind9 (DNS-01 test)"
  apt_install bind9 bind9-utils
fi
if command -v systemctl >/dev/null 2>&1; then systemctl stop named >/dev/null 2>&1 || true; fi
if command -v service >/dev/null 2>&1; then service named stop >/dev/null 2>&1 || true; fi
LEVEE_TEST_NAMED=$(command -v named || echo /usr/sbin/named)
export LEVEE_TEST_NAMED
"$LEVEE_TEST_NAMED" -v
