// Package tcp is the data path of TCP routes: it accepts client
// connections on a TCP listener (or takes them from a TLS listener whose
// ClientHello names a TCP route, SNIListener), picks the route from the
// router's current snapshot, and relays bytes to one of its backends.
//
// One connection goes through these steps, each of which may close it:
//
//  1. Match: the route of the listener (Snapshot.MatchTCP), by SNI on a
//     TLS listener. No route: closed ("no_route").
//  2. Limit: the route's tcp.maxConnections. Beyond it: closed ("limit").
//  3. Breaker: the route's breaker admits or refuses. An open breaker
//     refuses at once: closed, logged and counted ("circuit_open"); no
//     backend is dialled.
//  4. Connect: round robin over the route's backends that are up and have
//     a weight, each dial bounded by tcp.connectTimeout; a backend that
//     refuses or times out gives its turn to the next one, once each.
//     Every backend failing: closed ("connect_failed").
//  5. Relay: bytes are copied both ways. A side that ends its stream
//     (EOF) has the other side's write half closed (TCP half-close,
//     RFC 9293 3.6), and the relay ends when both directions are done, or
//     at the first error, or when no byte moved either way for
//     tcp.idleTimeout.
//
// # What the breaker is told
//
// The breaker judges the backend, never the client (the rule of the HTTP
// path too). A connect that fails or times out is a failure. Once
// connected, the first byte the backend sends is a success; a backend
// that resets the connection before sending any byte is a failure, and so
// is one that closes its side first while the client's is still open. A
// client that leaves before the backend has said anything, and a
// connection that stays silent until the idle timeout, are neutral. Only
// the side that ended the relay first is judged: closing both sides then
// makes errors that blame nobody.
package tcp
