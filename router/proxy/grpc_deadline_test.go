package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/router/config"
)

func TestParseGRPCTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1m", time.Millisecond, true},
		{"250u", 250 * time.Microsecond, true},
		{"3S", 3 * time.Second, true},
		{"2M", 2 * time.Minute, true},
		{"1H", time.Hour, true},
		{"99999999n", 99999999, true},
		{"", 0, false},
		{"m", 0, false},
		{"123456789m", 0, false}, // more than 8 digits
		{"-1m", 0, false},
		{"+1m", 0, false},
		{"1x", 0, false},
		{"1.5S", 0, false},
	} {
		got, ok := parseGRPCTimeout(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseGRPCTimeout(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// A gRPC backend gives up on a call once its grpc-timeout passed, as
// grpc-go does, by resetting the stream: the client's deadline ended the
// call. It is answered DEADLINE_EXCEEDED, not UNAVAILABLE or a malformed
// body, and is no failure of the backend's: the breaker stays closed and
// counts nothing.
func TestGRPCDeadlinePassedIsDeadlineExceeded(t *testing.T) {
	h := newHarness(t, Options{})
	be := newH2Backend(t, false, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond) // the backend's work, longer than the call's deadline
		panic(http.ErrAbortHandler)       // gives up: RST_STREAM
	})
	p := breaker.Params{MinRequests: 100, ConsecutiveFailures: 2, Cooldown: 10 * time.Second}
	h.set(config.SourceDocker, withBreaker(h2Route("slow", config.SchemeH2C, config.BackendTLS{}, be.backend()), p))
	base, c := grpcFront(t, h)
	for range 3 {
		req, _ := http.NewRequest(http.MethodPost, base+"/pkg.Service/Method", strings.NewReader("\x00\x00\x00\x00\x00"))
		req.Host = "slow.test"
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		req.Header.Set("Grpc-Timeout", "5m")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if got := resp.Header.Get("Grpc-Status"); got != "4" {
			t.Fatalf("grpc-status %q (%s), want 4 DEADLINE_EXCEEDED", got, resp.Header.Get("Grpc-Message"))
		}
	}
	if s := breakerState(t, h, "slow"); s != "closed" {
		t.Errorf("breaker %s after calls whose own deadline passed, want closed", s)
	}
	if st := routeGuard(t, h, "slow").Breaker().Stats(); st.Failures != 0 {
		t.Errorf("breaker %+v, want no failure counted", st)
	}
}
