package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// The docker provider's connection reaches /ready and /metrics: with no
// engine at the address, it is reported disconnected, with the error
// naming the address, and its flags reach it (a 250ms backoff cap means
// retries, counted, within the test's deadline).
func TestBuildReportsTheDockerConnection(t *testing.T) {
	const host = "tcp://127.0.0.1:1"
	cfg, err := parseServeFlags([]string{"--docker-host", host, "--state-file", filepath.Join(t.TempDir(), "state.json"),
		"--docker-backoff-max", "250ms", "--docker-call-timeout", "2s"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
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

	dockertest.Eventually(t, 30*time.Second, func() error {
		rec := httptest.NewRecorder()
		a.api.ServeHTTP(rec, apiRequest("/ready"))
		var body struct {
			Providers []struct {
				Name, State, Error string
				Reconnects         int
			}
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			return fmt.Errorf("/ready body %q: %w", rec.Body, err)
		}
		if len(body.Providers) != 1 {
			return fmt.Errorf("/ready providers = %+v, want docker only", body.Providers)
		}
		p := body.Providers[0]
		if rec.Code != http.StatusServiceUnavailable || p.Name != "docker" || p.State != "disconnected" ||
			!strings.Contains(p.Error, host) || p.Reconnects < 2 {
			return fmt.Errorf("/ready = %d %s, want 503 with docker disconnected, its error naming %s, and retries", rec.Code, rec.Body, host)
		}
		return nil
	})
	rec := httptest.NewRecorder()
	a.api.ServeHTTP(rec, apiRequest("/metrics"))
	for _, want := range []string{
		`levee_provider_connected{provider="docker"} 0`,
		`levee_provider_state{provider="docker",state="connected"} 0`,
		`levee_provider_reconnects_total{provider="docker"} `,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// --swarm runs a second provider beside docker, against the same engine:
// /ready lists both, and the metrics carry one series per provider.
func TestBuildRunsTheSwarmProviderBesideDocker(t *testing.T) {
	const host = "tcp://127.0.0.1:1"
	cfg, err := parseServeFlags([]string{"--swarm", "--docker-host", host, "--state-file", filepath.Join(t.TempDir(), "state.json"),
		"--docker-backoff-max", "250ms", "--docker-call-timeout", "2s"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
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

	dockertest.Eventually(t, 30*time.Second, func() error {
		rec := httptest.NewRecorder()
		a.api.ServeHTTP(rec, apiRequest("/ready"))
		var body struct {
			Providers []struct{ Name, State, Error string }
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			return fmt.Errorf("/ready body %q: %w", rec.Body, err)
		}
		var names []string
		for _, p := range body.Providers {
			if p.State != "disconnected" || !strings.Contains(p.Error, host) {
				return fmt.Errorf("provider %s: %s %q, want disconnected naming %s", p.Name, p.State, p.Error, host)
			}
			names = append(names, p.Name)
		}
		if strings.Join(names, ",") != "docker,swarm" {
			return fmt.Errorf("/ready providers %v, want docker and swarm", names)
		}
		return nil
	})
	rec := httptest.NewRecorder()
	a.api.ServeHTTP(rec, apiRequest("/metrics"))
	for _, want := range []string{`levee_provider_connected{provider="docker"} 0`, `levee_provider_connected{provider="swarm"} 0`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// apiRequest is a GET of path as a client on loopback sends it (the API
// refuses other Host names).
func apiRequest(path string) *http.Request {
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1:3035"
	return req
}
