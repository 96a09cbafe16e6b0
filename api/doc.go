// Package api is Levee's REST API: entrypoints as JSON or YAML (validated
// by the same decoder as labels), persisted durably, behind bearer tokens;
// diagnostics, breaker state and control, live events (SSE), Prometheus
// metrics and an OpenAPI document generated from the route table.
//
// The model: the API is one config source among others ("api"). Its
// entrypoints live in a Store (package api/store), which owns the state
// file and its log and is their only writer. Every accepted change is
// appended to the log and fsynced before the client hears success (the
// snapshot beside it is rewritten atomically once the log grows: the
// store's package doc gives the format and the crash rules), and then
// the Store hands the router its complete API set (Update with
// Source "api"), exactly like any other provider. Everything the API shows
// about the running system (merged entrypoints of all sources, breakers,
// diagnostics, events) is read from the router through the small Router
// interface, so this package does not depend on how the router is built.
//
// Before any of that, every request passes the API's own checks
// (origin.go): a Host that names the API, writes from its own origin
// only, with JSON or YAML bodies; and no answer shows a stored password
// hash (redact.go).
//
// Every route is declared once in a table (routes.go); the same table
// registers the handlers on the ServeMux and generates /openapi.json, so
// the document cannot drift from the handlers.
package api
