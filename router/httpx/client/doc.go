// Package client is Levee's client for backend traffic. It knows
// nothing of routes: the proxy hands it a request whose URL names the
// backend, and gets the response with its head read.
//
// The model: a Transport keeps an idle pool of keep-alive connections per
// backend (host:port) and runs each exchange on the caller's goroutine:
// write the request head (and a small body), wait for the response head
// under a read deadline, hand back a body that streams from the
// connection. A request body that may block (large or of unknown length)
// is written by a goroutine of its own, so that a backend answering early
// does not deadlock the exchange. The header timeout runs from the last
// byte of the request sent: a slow upload is not a slow backend.
//
// A connection goes back to the pool only after an answer framed exactly,
// read to its end, with nothing left over in the buffer (a byte there would
// be taken for the next request's answer); after answers whose framing
// backends often get wrong, and after an idle period, it is peeked at
// before reuse. Interim answers (1xx) reach an Informer; a 101 hands the
// connection over. Standard puts net/http's Transport under the same
// contract.
//
// HTTPS: a Transport (or a Standard) given a TLS configuration runs the
// client handshake over each new connection, bounded by the dial timeout,
// the server name defaulting to the backend's host; a failure is a
// *TLSError naming the reason, the request never sent. Over TLS the
// connection is read and written through crypto/tls (not raw system
// calls); the pool's peek looks at the TCP connection under it.
//
// HTTP/2: NewH2 is net/http's Transport with HTTP/2 alone (cleartext with
// prior knowledge, or TLS with ALPN h2 and nothing else) under Standard's
// contract; multiplexing, flow control, GOAWAY and stream resets are its.
// A TLS backend that does not select h2 is a *TLSError of ReasonNoH2. A
// request the backend takes on no stream (refused, or no stream granted)
// ends after H2MaxStreams streams and H2MaxDials dials with a
// *StreamRefusedError.
//
// Files: client.go (Transport and its pool), conn.go (one connection and
// its exchange), response.go (reading answers and their bodies), tls.go
// (the handshake and its errors), h2.go (the HTTP/2 client), h2refused.go
// (its bounds on refused streams).
package client
