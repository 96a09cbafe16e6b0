// Package tlsscan holds the tests that point the field's own scanners at
// a Levee TLS listener, through the binary, on both HTTP servers
// (--http-server=levee and stdlib):
//
//   - testssl.sh (Debian's testssl.sh package) checks the TLS policy of
//     docs/tls.md: no protocol below TLS 1.2, no weak cipher category, only
//     forward-secret suites, and no finding it rates LOW or worse;
//   - h2spec (github.com/summerwind/h2spec, built from the Go module
//     proxy) checks the HTTP/2 server that ALPN "h2" reaches: every case
//     passes but the four that Go's HTTP/2 server is known to fail, which
//     docs/tls.md names. A fifth failure fails the test, and so does one of
//     the four passing (the docs would be out of date).
//
// The tools are found as $LEVEE_TEST_TESTSSL and $LEVEE_TEST_H2SPEC, else
// in PATH (testssl, testssl.sh, h2spec); .ci/setup.d/tlsscan.sh installs
// both. Without them the tests skip, and fail under CI=true.
//
// make test runs this package once: it is not among the packages run again
// per server x client combination, because it runs both servers itself and
// the backend client plays no part in a handshake.
package tlsscan
