//go:build kubernetes

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// With the provider linked, a kubeconfig that cannot be read stops serve
// at start-up, naming the file.
func TestServeKubernetesBadKubeconfig(t *testing.T) {
	var out, errOut bytes.Buffer
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.yaml")
	args := []string{"serve", "--docker=false", "--kubernetes", "--kubernetes-kubeconfig", missing, "--http-listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0", "--state-file", filepath.Join(dir, "state.json")}
	if code := run(context.Background(), args, &out, &errOut, envOf(nil)); code == 0 {
		t.Fatalf("exit 0, want a failure")
	}
	if got := out.String() + errOut.String(); !strings.Contains(got, missing) {
		t.Fatalf("output does not name the kubeconfig:\n%s", got)
	}
}
