package proxy

import (
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
)

func TestRemoveHopByHop(t *testing.T) {
	h := http.Header{
		"Connection":        {"close, x-named", "Keep-Alive, X-Other"},
		"Keep-Alive":        {"timeout=5"},
		"Te":                {"trailers"},
		"Transfer-Encoding": {"chunked"},
		"Upgrade":           {"websocket"},
		"X-Named":           {"1"},
		"X-Other":           {"2"},
		"X-Kept":            {"3"},
	}
	removeHopByHop(h)
	if len(h) != 1 || h.Get("X-Kept") != "3" {
		t.Fatalf("left %v, want only X-Kept", h)
	}
}

// TestRemoveHopByHopEitherWay: a small header (scanned) and a large one
// (each name deleted) lose the hop-by-hop fields and those Connection
// names, and keep the rest; isHopByHop knows every hopByHop name.
func TestRemoveHopByHopEitherWay(t *testing.T) {
	for _, hop := range [][]string{{"Keep-Alive", "Te", "Upgrade", "Proxy-Authorization"}, hopByHop[1:]} {
		h := http.Header{"X-Named": {"1"}, "X-Kept": {"2"}}
		for _, k := range hop {
			h[k] = []string{"v"}
		}
		h["Connection"] = []string{"X-Named"}
		for i := 0; len(hop) > 4 && len(h) <= smallHeader; i++ {
			h["X-Filler-"+string(rune('A'+i))] = []string{"f"}
		}
		want := len(h) - len(hop) - 2 // and Connection, X-Named
		src := h.Clone()
		removeHopByHop(h)
		dst := http.Header{}
		moveEndToEnd(dst, src)
		if !reflect.DeepEqual(dst, h) || !reflect.DeepEqual(src, h) {
			t.Errorf("moveEndToEnd: moved %v, left %v; removeHopByHop left %v", dst, src, h)
		}
		for _, k := range append(hopByHop[:], "X-Named") {
			if _, ok := h[k]; ok {
				t.Errorf("%d hop-by-hop fields: %s kept", len(hop), k)
			}
		}
		if len(h) != want || h.Get("X-Kept") != "2" {
			t.Errorf("left %v, want %d fields with X-Kept", h, want)
		}
	}
	for _, k := range hopByHop {
		if !isHopByHop(k) {
			t.Errorf("isHopByHop(%q) = false", k)
		}
	}
	if isHopByHop("X-Kept") || isHopByHop("Content-Length") {
		t.Error("isHopByHop is true for an end-to-end field")
	}
}

// The request path removes hop-by-hop fields without allocating, with or
// without a Connection header naming canonical fields.
func TestRemoveHopByHopAllocs(t *testing.T) {
	for _, conn := range []string{"", "keep-alive", "close, X-Trace"} {
		h := http.Header{"Accept": {"*/*"}}
		value := []string{conn}
		if n := testing.AllocsPerRun(100, func() {
			if conn != "" {
				h["Connection"] = value
			}
			removeHopByHop(h)
		}); n != 0 {
			t.Errorf("Connection %q: %v allocations per call, want 0", conn, n)
		}
	}
}

// TE passes on as "trailers" when the client's list holds that token,
// whatever its case and place in the list; nothing else passes.
func TestTrailersTE(t *testing.T) {
	p := New(router.New(router.Options{}), Options{Logger: zerolog.Nop()})
	defer p.Close()
	for te, want := range map[string]string{
		"trailers":               "trailers",
		"gzip, Trailers":         "trailers",
		"deflate;q=0.5,trailers": "trailers",
		"gzip":                   "",
		"no-trailers":            "",
	} {
		req := httptest.NewRequest(http.MethodGet, "http://web.test/", nil)
		req.Header.Set("TE", te)
		x := &exchange{p: p, req: req}
		x.prepareHeaders()
		if got := req.Header.Get("Te"); got != want {
			t.Errorf("TE %q: backend gets %q, want %q", te, got, want)
		}
	}
}
