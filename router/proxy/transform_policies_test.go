package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/compress"
	"github.com/levee-proxy/levee/router/policy/headers"
)

// The transform policies around the real request path, behind Levee's
// server (or net/http's, LEVEE_TEST_SERVER=stdlib): the response the
// exchange copies from the backend is compressed as it streams, flushes
// reach the client through the policies' writers, and the policies'
// headers go out with it. (The chain that runs them per route is the
// router's; here they wrap the handler in Stage order.)
func TestTransformPoliciesAroundTheExchange(t *testing.T) {
	big := strings.Repeat("levee streams compressed bodies. ", 1000)
	next := make(chan struct{})
	be := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			w.Header().Set("Server", "backend")
			_, _ = io.WriteString(w, big)
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				_, _ = io.WriteString(w, "data: "+strconv.Itoa(i)+"\n\n")
				w.(http.Flusher).Flush()
				if i < 2 {
					select {
					case <-next:
					case <-time.After(10 * time.Second):
						return
					}
				}
			}
		}
	}))
	defer be.Close()
	host, port, _ := net.SplitHostPort(be.Listener.Addr().String())
	p, _ := strconv.Atoi(port)

	h := newHarness(t, Options{})
	h.set(config.SourceDocker, ep("tp", config.Backend{Address: host, Port: p, Weight: 1}))
	ps := []policy.Policy{
		headers.New(&config.Headers{Response: map[string]string{"Server": ""}, ContentTypeNosniff: true}),
		compress.New(&config.Compress{Encodings: []string{"gzip"}, MinResponseBodyBytes: 1024}, compress.NewEncoders(compress.DefaultBudget)),
	}
	var handler http.Handler = h.p
	for i := len(ps) - 1; i >= 0; i-- {
		pol, inner := ps[i], handler
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { pol.Serve(w, r, inner) })
	}
	front := newFront(t, handler)
	defer front.Close()

	get := func(path string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, front.URL+path, nil)
		req.Host = "tp.test"
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := front.client.Transport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	resp := get("/big")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Content-Length") == strconv.Itoa(len(big)) ||
		resp.Header.Get("Server") != "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" || resp.Header.Get("Vary") != "Accept-Encoding" {
		t.Fatalf("big: %d %v", resp.StatusCode, resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(zr)
	resp.Body.Close()
	if err != nil || string(body) != big {
		t.Fatalf("big body: %d bytes, %v", len(body), err)
	}

	resp = get("/sse")
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("sse: %v", resp.Header)
	}
	zr, err = gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(zr)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != "data: "+strconv.Itoa(i)+"\n" {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		_, _ = br.ReadString('\n')
		if i < 2 {
			next <- struct{}{}
		}
	}
}
