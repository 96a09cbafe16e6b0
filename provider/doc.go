// Package provider is the home of Levee's config sources. Each source
// (provider/docker for containers, the same package in Swarm mode for
// services, the REST API) hands the router its complete current set of
// entrypoints and diagnostics (the API store, after that, only what each
// write changed); provider/labels is the label grammar that
// the Docker provider, its Swarm mode and `levee validate` share.
package provider
