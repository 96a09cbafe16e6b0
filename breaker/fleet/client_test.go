package fleet

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/breaker/fleet/redistest"
)

func TestNewClient(t *testing.T) {
	tests := []struct {
		url     string
		want    string // client type
		wantErr string
	}{
		{url: "redis://127.0.0.1:6379/0", want: "*redis.Client"},
		{url: "rediss://user:pw@127.0.0.1:6380/1", want: "*redis.Client"},
		{url: "redis://127.0.0.1:26379/0?master_name=mymaster&addr=127.0.0.1:26380", want: "*redis.Client"}, // a failover client is a *redis.Client
		{url: "redis://127.0.0.1:7000?cluster=true", want: "*redis.ClusterClient"},
		{url: "redis://127.0.0.1:7000?addr=127.0.0.1:7001", want: "*redis.ClusterClient"},
		{url: "http://127.0.0.1:6379", wantErr: `scheme "http"`},
		{url: "redis://user:secret@127.0.0.1:6379/notanumber", wantErr: "xxxxx"},
		{url: "redis://127.0.0.1:6379/0?bogus=1", wantErr: "bogus"},
	}
	for _, tt := range tests {
		c, err := NewClient(tt.url)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewClient(%q) error %v, want one containing %q", tt.url, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("NewClient(%q) error %q shows the password", tt.url, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewClient(%q): %v", tt.url, err)
			continue
		}
		if got := typeName(c); got != tt.want {
			t.Errorf("NewClient(%q) = %s, want %s", tt.url, got, tt.want)
		}
		_ = c.Close()
	}
}

func typeName(c redis.UniversalClient) string {
	switch c.(type) {
	case *redis.ClusterClient:
		return "*redis.ClusterClient"
	case *redis.Client:
		return "*redis.Client"
	}
	return "other"
}

// TestMetrics: flushes, counted outcomes, fleet and local windows, and
// the fallback gauge.
func TestMetrics(t *testing.T) {
	srv := redistest.Start(t)
	reg := prometheus.NewRegistry()
	c, _ := NewClient(srv.URL())
	s, err := New(atOnce(Options{Client: c, FlushInterval: time.Hour, Timeout: time.Second, Registerer: reg}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := breaker.NewWithParams("m", fleetParams, breaker.Options{})
	s.Join("m", b, nil)
	s.Flush(context.Background())
	report(b, 7, breaker.Success)
	s.Flush(context.Background())
	if got := value(s.metrics.flushed.WithLabelValues("m")); got != 7 {
		t.Errorf("levee_breaker_store_outcomes_total = %v, want 7", got)
	}
	if got := value(s.metrics.window.WithLabelValues("m", "fleet")); got != 7 {
		t.Errorf("fleet window = %v, want 7", got)
	}
	if got := value(s.metrics.window.WithLabelValues("m", "local")); got != 7 {
		t.Errorf("local window = %v, want 7", got)
	}
	if got := value(s.metrics.fallback.WithLabelValues("m")); got != 0 {
		t.Errorf("fallback = %v, want 0", got)
	}
	var h dto.Metric
	if err := s.metrics.flushSeconds.Write(&h); err != nil || h.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("levee_breaker_store_flush_seconds: %d flushes (%v), want 2", h.GetHistogram().GetSampleCount(), err)
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) < 5 {
		t.Errorf("registry holds %d families (%v): the store's metrics are not registered", len(mfs), err)
	}
	srv.Stop()
	s.Flush(context.Background())
	if got := value(s.metrics.fallback.WithLabelValues("m")); got != 1 {
		t.Errorf("fallback = %v with the store down, want 1", got)
	}
	if got := value(s.metrics.errors); got != 1 {
		t.Errorf("errors = %v, want 1", got)
	}
}

// value reads a counter or gauge.
func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	if m.Counter != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestSlowStore: a store that answers later than the timeout (here, one
// that pauses its clients) is a fallback (W075) like one that is down,
// and the breaker rejoins when it answers in time again.
func TestSlowStore(t *testing.T) {
	srv := redistest.Start(t)
	c, _ := NewClient(srv.URL())
	admin := pauser(t, srv.URL())
	s, err := New(atOnce(Options{Client: c, FlushInterval: time.Hour, Timeout: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := breaker.NewWithParams("slow", fleetParams, breaker.Options{})
	s.Join("slow", b, nil)
	s.Flush(context.Background())
	if !b.Following() {
		t.Fatal("not following after the first flush")
	}
	if err := admin.Do(context.Background(), "CLIENT", "PAUSE", "3000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Flush(context.Background())
	// The store stays paused for 3 s (UNPAUSE below waits for that too):
	// a flush that waited for it rather than for its 100 ms timeout would
	// take that long.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a flush to a paused store took %v; the timeout is 100ms", took)
	}
	if b.Following() {
		t.Fatal("still following a store slower than the timeout")
	}
	if ds := s.Diagnostics(); len(ds) != 1 || ds[0].Code != "W075" {
		t.Fatalf("diagnostics %v, want [W075]", ds)
	}
	if err := admin.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	eventually(t, "rejoined", func() bool {
		s.Flush(context.Background())
		return b.Following()
	})
	if ds := s.Diagnostics(); len(ds) != 0 {
		t.Fatalf("diagnostics %v after rejoining, want none", ds)
	}
}

// TestSubscribedWhenNewReturns: New returns once Redis has confirmed the
// event subscription, so no announcement made after it is missed (with a
// manual flush, a missed one would never be made up for); a store that
// does not answer holds New up no longer than Timeout.
func TestSubscribedWhenNewReturns(t *testing.T) {
	srv := redistest.Start(t)
	admin := pauser(t, srv.URL())
	for i := 1; i <= 3; i++ {
		c, _ := NewClient(srv.URL())
		s, err := New(Options{Client: c, FlushInterval: time.Hour, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n, err := admin.PubSubNumSub(context.Background(), s.channel).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n[s.channel] != int64(i) {
			t.Fatalf("store %d: %d subscribers when New returned, want %d", i, n[s.channel], i)
		}
	}
	if err := admin.Do(context.Background(), "CLIENT", "PAUSE", "3000", "ALL").Err(); err != nil {
		t.Fatal(err)
	}
	c, _ := NewClient(srv.URL())
	start := time.Now()
	s, err := New(Options{Client: c, FlushInterval: time.Hour, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The store stays paused for 3 s (UNPAUSE below waits for that too):
	// a New that waited for it rather than for its 100 ms timeout would
	// take that long.
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("New took %v against a paused store; the timeout is 100ms", took)
	}
	if err := admin.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	// go-redis subscribes once the store answers again
	eventually(t, "the fourth subscription", func() bool {
		n, err := admin.PubSubNumSub(context.Background(), s.channel).Result()
		return err == nil && n[s.channel] == 4
	})
}

// pauser returns the client that pauses and unpauses the store at url.
// Redis runs no command during CLIENT PAUSE ALL, CLIENT UNPAUSE included:
// the UNPAUSE is answered when the pause ends, so this client waits
// longer for an answer than any pause the tests make.
func pauser(t *testing.T, url string) redis.UniversalClient {
	t.Helper()
	c, err := NewClient(url + "?read_timeout=20s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
