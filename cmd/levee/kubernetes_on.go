//go:build kubernetes

package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/levee-proxy/levee/api"
	"github.com/levee-proxy/levee/provider/kubernetes"
	"github.com/levee-proxy/levee/router/config"
)

// newKubernetes builds the Kubernetes provider from the serve flags.
func newKubernetes(cfg serveConfig, log zerolog.Logger, reg prometheus.Registerer, sink kubernetes.Sink) (api.ReadyCheck, func(context.Context), error) {
	k := cfg.Kubernetes
	var rc *rest.Config
	var err error
	if k.Kubeconfig != "" {
		rc, err = clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	} else {
		rc, err = rest.InClusterConfig()
	}
	if err != nil {
		return api.ReadyCheck{}, nil, fmt.Errorf("kubernetes provider: client config (kubeconfig %q): %w", k.Kubeconfig, err)
	}
	client, err := k8s.NewForConfig(rc)
	if err != nil {
		return api.ReadyCheck{}, nil, fmt.Errorf("kubernetes provider: client: %w", err)
	}
	prov, err := kubernetes.New(kubernetes.Options{
		Client:       client,
		IngressClass: k.IngressClass,
		Namespaces:   k.namespaces(),
		Logger:       log.With().Str("component", config.SourceKubernetes).Logger(),
		Registerer:   withHostLabel(cfg, reg),
	})
	if err != nil {
		return api.ReadyCheck{}, nil, err
	}
	check := api.ReadyCheck{Name: config.SourceKubernetes, Ready: prov.Synced, Connection: func() api.Connection {
		st := prov.Status()
		return api.Connection{State: string(st.State), Since: st.Since, Error: st.LastError, Reconnects: st.Retries}
	}}
	run := func(ctx context.Context) {
		if err := prov.Run(ctx, sink); err != nil {
			log.Error().Err(err).Msg("kubernetes provider stopped")
		}
	}
	return check, run, nil
}

// namespaces are the --kubernetes-namespaces, without blanks.
func (k kubernetesConfig) namespaces() []string {
	var out []string
	for _, ns := range strings.Split(k.Namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}
