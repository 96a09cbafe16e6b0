package main

import (
	"flag"
)

// The Kubernetes provider (provider/kubernetes) is linked only into a
// binary built with the kubernetes build tag (kubernetes_on.go): client-go
// doubles the binary and adds about 24 MiB to every process's resident
// memory, which an edge proxy in front of Docker should not carry. The
// flags exist in every build; without the tag --kubernetes is refused at
// start-up (kubernetes_off.go).

// defaultIngressClass is kubernetes.DefaultIngressClass, spelled here so
// that this file does not link the provider.
const defaultIngressClass = "levee"

// kubernetesConfig are the --kubernetes* serve flags.
type kubernetesConfig struct {
	Enabled      bool
	Kubeconfig   string
	IngressClass string
	Namespaces   string
}

func (k *kubernetesConfig) register(fs *flag.FlagSet) {
	fs.BoolVar(&k.Enabled, "kubernetes", false, "route the Ingress objects of --kubernetes-ingress-class to the ready endpoints of their Services (docs/kubernetes.md)")
	fs.StringVar(&k.Kubeconfig, "kubernetes-kubeconfig", "", "kubeconfig file of the cluster; without it the in-cluster service account is used")
	fs.StringVar(&k.IngressClass, "kubernetes-ingress-class", defaultIngressClass, "spec.ingressClassName of the Ingresses routed")
	fs.StringVar(&k.Namespaces, "kubernetes-namespaces", "", "comma-separated namespaces watched (default every namespace)")
}
