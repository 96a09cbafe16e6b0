package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/router/config"
)

// The route's traffic view (GET /traffic/{route}) counts its gRPC calls
// by method and the status the client read: the backend's, in trailers
// or a Trailers-Only head, and none for a stream broken before its
// status; a route that served only plain requests has no grpc field.
func TestRouteTrafficCountsGRPCMethodsByStatus(t *testing.T) {
	h := newHarness(t, Options{EjectAfter: -1})
	status := func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/grpc")
		switch r.URL.Path {
		case "/shop.Cart/Add":
			w.WriteHeader(200)
			_, _ = w.Write([]byte("\x00\x00\x00\x00\x00"))
			w.Header().Set(http.TrailerPrefix+"Grpc-Status", "0")
		case "/shop.Cart/Pay":
			w.Header().Set("Grpc-Status", "14")
			w.WriteHeader(200)
		default:
			w.WriteHeader(200)
			_, _ = w.Write([]byte("\x00\x00\x00\x00\x05ab"))
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
	}
	h.set(config.SourceDocker,
		h2Route("shop", config.SchemeH2C, config.BackendTLS{}, newH2Backend(t, false, status).backend()),
		ep("web", newBackend(t, "web").backend()))
	base, c := grpcFront(t, h)
	call := func(path string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader("\x00\x00\x00\x00\x00"))
		req.Host = "shop.test"
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		_, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	for range 3 {
		call("/shop.Cart/Add")
	}
	call("/shop.Cart/Pay?x=1")
	call("/shop.Cart/Pay")
	call("/shop.Cart/Break")
	if code, _, _ := h.get("web.test", "/"); code != http.StatusOK {
		t.Fatalf("web: %d", code)
	}

	type view struct {
		GRPC *struct {
			Methods []struct {
				Method   string            `json:"method"`
				Statuses map[string]uint64 `json:"statuses"`
			} `json:"methods"`
		} `json:"grpc"`
	}
	read := func(id string) (view, string) {
		t.Helper()
		rt, ok := h.r.RouteTraffic(id)
		if !ok {
			t.Fatalf("no route %s", id)
		}
		b, err := json.Marshal(rt)
		if err != nil {
			t.Fatal(err)
		}
		var v view
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		return v, string(b)
	}
	want := `[{shop.Cart/Add map[OK:3]} {shop.Cart/Pay map[UNAVAILABLE:2]} {shop.Cart/Break map[none:1]}]`
	var got string
	eventually(t, "every call counted", func() bool {
		v, raw := read("shop")
		got = raw
		if v.GRPC == nil {
			return false
		}
		got = fmt.Sprint(v.GRPC.Methods)
		return got == want
	})
	if got != want {
		t.Fatalf("shop's grpc methods %s, want %s", got, want)
	}
	if v, raw := read("web"); v.GRPC != nil || strings.Contains(raw, `"grpc"`) {
		t.Errorf("web, plain requests only, has a grpc field: %s", raw)
	}
}
