//go:build !kubernetes

package main

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/api"
	"github.com/levee-proxy/levee/router/config"
)

// kubernetesSink is what the provider sends its routes to
// (kubernetes.Sink).
type kubernetesSink interface{ Update(config.SourceUpdate) }

// errNoKubernetes is --kubernetes in a build without the provider.
var errNoKubernetes = errors.New("--kubernetes: this binary has no Kubernetes provider; build it with the kubernetes tag: make build TAGS=kubernetes (docs/kubernetes.md)")

// newKubernetes refuses --kubernetes: this build has no provider.
func newKubernetes(serveConfig, zerolog.Logger, prometheus.Registerer, kubernetesSink) (api.ReadyCheck, func(context.Context), error) {
	return api.ReadyCheck{}, nil, errNoKubernetes
}
