// Package front assembles the HTTP servers of one proxy listener: what a
// plain listener serves (HTTP/1.1, and with H2C cleartext HTTP/2 with
// prior knowledge beside it), and what a TLS listener serves (HTTP/1.1
// and HTTP/2, chosen by ALPN). It knows nothing of routes: a listener's
// handler and its requests' base context come from the caller.
//
// Two server choices exist for HTTP/1.1, with the same limits:
// Levee's own (router/httpx/server, the default) and net/http's
// (Options.Stdlib). HTTP/2 is net/http's (golang.org/x/net/http2, the
// code net/http bundles) behind router/httpx/h2guard, on h2c and TLS
// alike, which bounds the control frames no HTTP/2 server refuses
// (SETTINGS, WINDOW_UPDATE, PRIORITY, PING, unknown types, and the empty
// DATA and CONTINUATION frames that carry nothing of a request) and cuts
// a connection that floods them (ENHANCE_YOUR_CALM), logging and counting
// the cut through Options.OnFloodCut. Every HTTP/2 connection is closed
// once no byte could be written to it for Limits.WriteTimeout.
//
// On a TLS listener with Levee's server, router/httpx/tlsmux does the
// handshakes and hands each connection to HTTP/1.1 or HTTP/2 by its
// negotiated protocol; with net/http's, net/http does both.
//
// Every wait is bounded by the listener's Limits: the request head and
// the TLS handshake by HeaderTimeout, an idle connection by IdleTimeout,
// a head's size by MaxHeaderBytes, the held end of an answer on TLS by
// WriteTimeout.
package front
