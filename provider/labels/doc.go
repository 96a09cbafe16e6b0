// Package labels turns container labels into Levee entrypoints.
//
// The grammar is <prefix>.<protocol>.<service>.<field>=<value> plus the
// global labels <prefix>.enable and <prefix>.network. The parser's job is only
// strings to typed values; ranges, defaults and diagnostics are the model's
// (package router/config), so labels and API payloads share one validator.
package labels
