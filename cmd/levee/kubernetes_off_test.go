//go:build !kubernetes

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/provider/kubernetes"
)

// Without the kubernetes build tag, serve --kubernetes stops at start-up
// and says how to get a binary with the provider.
func TestServeKubernetesNeedsTheBuildTag(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	args := []string{"serve", "--docker=false", "--kubernetes", "--http-listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0", "--state-file", filepath.Join(dir, "state.json")}
	if code := run(context.Background(), args, &out, &errOut, envOf(nil)); code == 0 {
		t.Fatalf("exit 0, want a failure")
	}
	if got := out.String() + errOut.String(); !strings.Contains(got, "TAGS=kubernetes") {
		t.Fatalf("output does not name the build tag:\n%s", got)
	}
}

// The flag's default is the provider's.
func TestDefaultIngressClassIsTheProviders(t *testing.T) {
	if defaultIngressClass != kubernetes.DefaultIngressClass {
		t.Fatalf("defaultIngressClass %q, provider's %q", defaultIngressClass, kubernetes.DefaultIngressClass)
	}
}
