// Package provider is the home of Levee's config sources. Each source
// (provider/docker, the REST API) hands the router its complete current set
// of entrypoints and diagnostics; provider/labels is the label grammar that
// the Docker provider and `levee validate` share.
package provider
