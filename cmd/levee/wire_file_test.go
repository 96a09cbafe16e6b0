package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// --config-dir runs the file provider beside docker (its metrics share
// the docker provider's names, which one registry takes only with the same
// help): /ready lists it connected, /metrics has its series, and its
// entrypoints are listed with source file. The variables work as the flags.
func TestBuildRunsTheFileProvider(t *testing.T) {
	dir := t.TempDir()
	body := "entrypoints:\n  - name: nas\n    config: {hostnames: [nas.test]}\n    backends: [{address: 127.0.0.1, port: 5000}]\n"
	if err := os.WriteFile(filepath.Join(dir, "nas.yaml"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServeFlags([]string{"--docker-host", "tcp://127.0.0.1:1", "--state-file", filepath.Join(t.TempDir(), "state.json")},
		envOf(map[string]string{"LEVEE_CONFIG_DIR": dir + ";" + t.TempDir()}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.ConfigDirs) != 2 || cfg.ConfigDirs[0] != dir {
		t.Fatalf("LEVEE_CONFIG_DIR gave %v", cfg.ConfigDirs)
	}
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	a, err := build(ctx, cfg, zerolog.Nop(), reg)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, background := range a.background {
		wg.Add(1)
		go func() { defer wg.Done(); background(ctx) }()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })

	dockertest.Eventually(t, 10*time.Second, func() error {
		rec := httptest.NewRecorder()
		a.api.ServeHTTP(rec, apiRequest("/ready"))
		var ready struct {
			Providers []struct {
				Name, State string
				Ready       bool
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &ready); err != nil {
			return fmt.Errorf("/ready body %q: %w", rec.Body, err)
		}
		i := slices.IndexFunc(ready.Providers, func(p struct {
			Name, State string
			Ready       bool
		}) bool {
			return p.Name == "file"
		})
		if i < 0 || !ready.Providers[i].Ready || ready.Providers[i].State != "connected" {
			return fmt.Errorf("/ready = %s, want file ready and connected", rec.Body)
		}
		return nil
	})
	rec := httptest.NewRecorder()
	a.api.ServeHTTP(rec, apiRequest("/entrypoints/nas@file"))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"source":"file"`) {
		t.Fatalf("GET /entrypoints/nas@file = %d %s", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	a.api.ServeHTTP(rec, apiRequest("/metrics"))
	for _, want := range []string{`levee_provider_connected{provider="docker"} 0`, `levee_provider_connected{provider="file"} 1`,
		`levee_provider_state{provider="file",state="connected"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
