package scale

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// routeCount is the size the issue asks for: 10,000 routes.
const routeCount = 10_000

// containerCount is the simulated Docker host: 1,000 labelled containers.
const containerCount = 1_000

// apiHost is the host name of API entrypoint i.
func apiHost(i int) string { return fmt.Sprintf("svc-%05d.bench.local", i) }

// apiPayload is API entrypoint i as a client would POST it. One in ten has a
// circuit breaker, one in ten a path prefix, so the table is not uniform.
func apiPayload(i int, backend string) []byte {
	host, port, _ := net.SplitHostPort(backend)
	p, _ := strconv.Atoi(port)
	cfg := map[string]any{"hostnames": []string{apiHost(i)}}
	if i%10 == 3 {
		cfg["circuit_breaker"] = map[string]any{"threshold": 0.5, "min_requests": 20, "cooldown_secs": 10}
	}
	if i%10 == 7 {
		cfg["path"] = "/api"
	}
	body, _ := json.Marshal(map[string]any{
		"name":     fmt.Sprintf("svc-%05d", i),
		"backends": []map[string]any{{"address": host, "port": p}},
		"config":   cfg,
	})
	return body
}

// apiEntrypoints decodes n API payloads the way the API store does (the
// store also sets the id to the name and the source to "api").
func apiEntrypoints(tb testing.TB, n int, backend string) []config.Entrypoint {
	tb.Helper()
	eps := make([]config.Entrypoint, 0, n)
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		id := fmt.Sprintf("svc-%05d", i)
		src := diagnostics.Source{Provider: config.SourceAPI, ObjectID: id, ObjectName: id}
		ep, _, err := config.DecodeEntrypoint(config.FormatJSON, apiPayload(i, backend), src)
		if err != nil {
			tb.Fatalf("decoding API payload %d: %v", i, err)
		}
		ep.ID, ep.Source, ep.Created = id, config.SourceAPI, created.Add(time.Duration(i)*time.Second)
		eps = append(eps, ep)
	}
	return eps
}

// containers is a synthetic Docker host: services of one to three replicas
// on one network, one in five with breaker labels and one in ten with a
// health check (healthy), so the parser does the same work as on a busy host.
func containers(n int) []labels.Container {
	cs := make([]labels.Container, 0, n)
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, svc := 0, 0; i < n; svc++ {
		replicas := 1 + svc%3
		for r := 0; r < replicas && i < n; r++ {
			name := fmt.Sprintf("app%04d", svc)
			l := map[string]string{
				"levee.enable":                   "true",
				"levee.http." + name + ".host":   name + ".docker.local",
				"levee.http." + name + ".port":   "8080",
				"levee.http." + name + ".path":   "/",
				"com.docker.compose.project":     "bench",
				"com.docker.compose.service":     name,
				"org.opencontainers.image.title": "echo",
			}
			if svc%5 == 0 {
				l["levee.http."+name+".circuitBreaker.threshold"] = "0.5"
				l["levee.http."+name+".circuitBreaker.minRequests"] = "20"
			}
			c := labels.Container{
				ID:           fmt.Sprintf("%064x", i+1),
				Name:         fmt.Sprintf("bench-%s-%d", name, r+1),
				Created:      created.Add(time.Duration(i) * time.Second),
				Labels:       l,
				Networks:     []labels.Network{{Name: "bench_default", IP: fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)}},
				ExposedPorts: []int{8080},
			}
			if svc%10 == 1 {
				c.HasHealthcheck, c.Health = true, "healthy"
			}
			cs = append(cs, c)
			i++
		}
	}
	return cs
}

// TestScaleInputs checks that the generated inputs become the routes the
// benchmarks assume: 10,000 API routes each matched by its own host, and
// 1,000 containers grouped into their services without error diagnostics.
func TestScaleInputs(t *testing.T) {
	eps := apiEntrypoints(t, routeCount, "127.0.0.1:9")
	snap, ds := router.NewSnapshot(eps)
	if got := len(snap.Routes()); got != routeCount {
		t.Fatalf("snapshot of %d API entrypoints has %d routes (diagnostics: %v)", routeCount, got, ds)
	}
	for _, i := range []int{0, 1, 3, 7, routeCount - 1} {
		path := "/"
		if i%10 == 7 {
			path = "/api/x"
		}
		rt := snap.Match("GET", apiHost(i), path)
		if rt == nil || rt.ID() != fmt.Sprintf("svc-%05d", i) {
			t.Fatalf("Match(GET, %s, %s) = %v, want svc-%05d", apiHost(i), path, rt, i)
		}
	}
	if rt := snap.Match("GET", "unknown.bench.local", "/"); rt != nil {
		t.Fatalf("Match on an unknown host = %s, want nil", rt.ID())
	}

	cs := containers(containerCount)
	got, cds := labels.Parser{Prefix: "levee"}.Parse(cs)
	for _, d := range cds {
		if d.Severity == diagnostics.Error {
			t.Fatalf("synthetic containers produce error diagnostic %+v", d)
		}
	}
	backends := 0
	for _, ep := range got {
		backends += len(ep.Backends)
	}
	if backends != containerCount {
		t.Fatalf("%d containers gave %d entrypoints with %d backends, want %d backends", containerCount, len(got), backends, containerCount)
	}
}
