// Package config is Levee's entrypoint config model and its one validator:
// what a routed service is (Entrypoint, Backend, Retry, HealthCheck,
// CircuitBreaker), how it is decoded from container labels and from API
// payloads, and what a provider hands the router (SourceUpdate: its whole
// current set of entrypoints and diagnostics).
//
// Data flows one way: provider → config → router → proxy → backend. A
// provider (Docker labels, the REST API) decodes through this package and
// sends SourceUpdates; the router turns them into immutable snapshots. This
// package imports nothing of the router or of the data plane (no HTTP
// client or server, no metrics), so a provider or `levee validate` can
// decode and check a config without linking the proxy.
//
// # One field table
//
// Every entrypoint field is one row of the field table (Fields): its label
// key and aliases, its JSON/YAML path and aliases, its kind, default,
// documentation, example, the diagnostic code a bad value produces, the
// setter that parses and checks it and the getter that reads it back. That
// one row drives label decoding (DecodeLabels), JSON and YAML decoding
// (DecodeEntrypoint), validation, the did-you-mean of unknown keys,
// encoding (EncodeEntrypoint: the payload is the table walked, each
// getter's value at its row's JSON path) and docs/labels.md
// (FieldsMarkdown, kept in sync by a test). A field is added or changed in
// one place, and labels, the API, the stored state and the docs cannot
// disagree about it.
//
// A getter is one line beside the setter, built from a few constructors
// (encode.go): value for a field the payload always writes, omitEmpty
// around one it leaves out when empty, a group's constructor (inHealth,
// inBreaker, inCORS..., declared beside the group's rows) for a field
// written while its group is on, and ofBackend for a backends[] field:
//
//	{Label: "path", JSON: "config.path", ..., set: setPath,
//		get: value(func(ep *Entrypoint) any { return ep.Path })},
//
// A field whose setter is made from an accessor of the field has one
// constructor for both, given as rw (breakerParam, healthCount...):
//
//	{Label: "healthCheck.rise", JSON: "config.health_check.rise", ...,
//		rw: healthCount(func(h *HealthCheck) *int { return &h.Rise })},
//
// TestEveryFieldRoundTrips takes every row's Example through labels,
// the payload in JSON and in YAML and back, and fails for a row without a
// getter, so that no field can be decoded but lost when it is stored.
//
// # One normalisation for every input
//
// A label value arrives as a string, a JSON or YAML value as a typed value
// (YAML is first converted to the JSON forms). The converters accept both,
// so "20" and 20 mean the same, and every value then goes through the same
// setter: hosts and methods lower- or upper-cased and deduplicated, paths
// normalised, durations as whole seconds or Go durations, breaker
// parameters checked together by breaker.Params.Validate. The same value
// therefore gives the same field, and the same mistake the same diagnostic
// code, whichever way it came in; EncodeEntrypoint writes a decoded
// entrypoint as the canonical JSON that DecodeEntrypoint reads back
// unchanged.
//
// # Fail soft, per field
//
// A bad value never rejects the whole config: the field keeps its default
// and a diagnostic names the key, the value as written, the fallback and
// the reason, with the field's code; every other field still applies. Only
// a missing essential drops something, and then only that entrypoint: a
// service without a valid host is not routed (E002, an error diagnostic)
// while the container's other services and every other container are. An
// API payload that cannot be an entrypoint at all (malformed body, bad
// name or protocol, no valid host) is an *InputError carrying the HTTP
// status, so the API refuses that one request.
package config
