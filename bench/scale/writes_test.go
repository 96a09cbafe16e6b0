package scale

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/api"
	"github.com/levee-proxy/levee/router"
)

// TestAPIWrites10k measures the API's write path at 10,000 routes, over
// HTTP on loopback with the real stack (api.Server, api.Store with its
// state log in a temp dir, the real codec, router.Router): 10,000
// entrypoints loaded through POST /entrypoints/bulk (one request) and one
// by one (POST /entrypoints, one client), then the latency of single
// writes (a PUT of one entrypoint) against the 10,000-route table. It
// runs only with LEVEE_BENCH_WRITES=1.
func TestAPIWrites10k(t *testing.T) {
	if os.Getenv("LEVEE_BENCH_WRITES") != "1" {
		t.Skip("set LEVEE_BENCH_WRITES=1 to measure API writes at 10,000 routes")
	}
	const backend = "127.0.0.1:9"
	bodies := make([][]byte, routeCount)
	for i := range bodies {
		bodies[i] = apiPayload(i, backend)
	}

	// Bulk: one request of 10,000 creates.
	srv := newAPI(t)
	ops := make([]map[string]any, routeCount)
	for i, b := range bodies {
		ops[i] = map[string]any{"op": "create", "entrypoint": json.RawMessage(b)}
	}
	bulk, _ := json.Marshal(map[string]any{"operations": ops})
	t0 := time.Now()
	resp := do(t, srv, "POST", "/entrypoints/bulk", bulk)
	bulkTime := time.Since(t0)
	if resp != http.StatusOK {
		t.Fatalf("bulk: %d", resp)
	}
	t.Logf("bulk: 10,000 entrypoints in one request: %v (%d bytes of body)", bulkTime.Round(time.Millisecond), len(bulk))
	single := putLatencies(t, srv, bodies, 500)
	t.Logf("single PUT at 10,000 routes (after bulk), %d writes: p50 %v, p99 %v, max %v", len(single),
		pct(single, 50), pct(single, 99), single[len(single)-1])

	if os.Getenv("LEVEE_BENCH_WRITES_ONE_BY_ONE") != "1" {
		return
	}
	// One by one.
	srv = newAPI(t)
	lat := make([]time.Duration, 0, routeCount)
	t0 = time.Now()
	for k, b := range bodies {
		if k%1000 == 0 {
			t.Logf("one by one: %d written after %v", k, time.Since(t0).Round(time.Millisecond))
		}
		t1 := time.Now()
		if code := do(t, srv, "POST", "/entrypoints", b); code != http.StatusCreated {
			t.Fatalf("POST: %d", code)
		}
		lat = append(lat, time.Since(t1))
	}
	oneByOne := time.Since(t0)
	first, last := slices.Clone(lat[:1000]), slices.Clone(lat[len(lat)-1000:])
	slices.Sort(first)
	slices.Sort(last)
	t.Logf("one by one: 10,000 POSTs in %v; first 1,000 p50 %v p99 %v; last 1,000 p50 %v p99 %v",
		oneByOne.Round(time.Millisecond), pct(first, 50), pct(first, 99), pct(last, 50), pct(last, 99))
}

// putLatencies PUTs entrypoint i (changing its path) n times, sorted.
func putLatencies(t *testing.T, srv *httptest.Server, bodies [][]byte, n int) []time.Duration {
	out := make([]time.Duration, 0, n)
	for k := range n {
		i := (k * 37) % len(bodies)
		var p map[string]any
		_ = json.Unmarshal(bodies[i], &p)
		p["config"].(map[string]any)["path"] = fmt.Sprintf("/v%d", k)
		b, _ := json.Marshal(p)
		t1 := time.Now()
		if code := do(t, srv, "PUT", "/entrypoints/"+p["name"].(string), b); code != http.StatusOK {
			t.Fatalf("PUT: %d", code)
		}
		out = append(out, time.Since(t1))
	}
	slices.Sort(out)
	return out
}

func pct(sorted []time.Duration, p int) time.Duration {
	return sorted[min(len(sorted)-1, len(sorted)*p/100)].Round(10 * time.Microsecond)
}

func newAPI(t *testing.T) *httptest.Server {
	t.Helper()
	reg := prometheus.NewRegistry()
	r := router.New(router.Options{Logger: zerolog.Nop(), Registerer: reg})
	t.Cleanup(r.Close)
	codec := api.StandardCodec()
	st, err := api.OpenStore(api.StoreOptions{Path: filepath.Join(t.TempDir(), "state.json"), Codec: codec, Sink: r})
	if err != nil {
		t.Fatal(err)
	}
	s, err := api.New(api.Options{Router: r, Store: st, Codec: codec, Gatherer: reg, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, srv *httptest.Server, method, path string, body []byte) int {
	req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sink bytes.Buffer
	_, _ = sink.ReadFrom(resp.Body)
	if resp.StatusCode >= 300 {
		t.Logf("%s %s: %d %s", method, path, resp.StatusCode, sink.String()[:min(300, sink.Len())])
	}
	return resp.StatusCode
}
