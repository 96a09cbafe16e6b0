// Package labels turns container labels, and Swarm service labels, into
// Levee entrypoints. A Swarm service is one Container with Service set: its
// labels are the service's, the diagnostics name the service, and its
// backends are its running tasks (or its virtual IP with lb.swarm=true).
//
// The grammar is <prefix>.<protocol>.<service>.<field>=<value> plus the
// global labels <prefix>.enable and <prefix>.network. The parser's job is only
// strings to typed values; ranges, defaults and diagnostics are the model's
// (package router/config), so labels and API payloads share one validator.
package labels
