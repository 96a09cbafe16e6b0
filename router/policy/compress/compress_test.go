package compress

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/levee-proxy/levee/router/config"
)

func defaults() *config.Compress {
	return &config.Compress{Encodings: config.DefaultEncodings, MinResponseBodyBytes: config.DefaultMinResponseBodyBytes}
}

func TestNegotiate(t *testing.T) {
	p := New(defaults(), NewEncoders(DefaultBudget))
	gzipFirst := New(&config.Compress{Encodings: []string{"gzip", "br"}}, NewEncoders(DefaultBudget))
	cases := []struct {
		p      *Policy
		accept string
		want   string
	}{
		{p, "", ""},
		{p, "gzip", "gzip"},
		{p, "gzip, deflate, br", "br"},
		{p, "gzip, deflate, br, zstd", "zstd"},
		{p, "br;q=0.5, gzip;q=0.8", "gzip"},
		{p, "zstd;q=0, br;q=0, gzip", "gzip"},
		{p, "*", "zstd"},
		{p, "*;q=0.1, gzip;q=0", "zstd"},
		{p, "identity", ""},
		{p, "gzip;q=0", ""},
		{p, "x-gzip", "gzip"},
		{p, "GZIP;Q=1", "gzip"},
		{p, "gzip;q=abc", ""},
		{p, "gzip;q=2", ""},
		{gzipFirst, "br, gzip", "gzip"},
		{gzipFirst, "br;q=1, gzip;q=0.9", "br"},
		{gzipFirst, "zstd", ""},
	}
	for _, c := range cases {
		var values []string
		if c.accept != "" {
			values = []string{c.accept}
		}
		if got := c.p.negotiate(values); got != c.want {
			t.Errorf("%v Accept-Encoding %q: %q, want %q", c.p.encodings, c.accept, got, c.want)
		}
	}
}

var text = strings.Repeat("Levee compresses what is worth compressing. ", 200)

func decodeBody(t *testing.T, enc string, body io.Reader) string {
	t.Helper()
	var r io.Reader
	switch enc {
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(body)
	case "zstd":
		zr, err := zstd.NewReader(body)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		r = zr
	default:
		r = body
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("decode %s: %v", enc, err)
	}
	return string(b)
}

func serve(p *Policy, req *http.Request, h http.HandlerFunc) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	p.Serve(rec, req, h)
	return rec
}

func TestCompressEachEncoding(t *testing.T) {
	p := New(defaults(), NewEncoders(DefaultBudget))
	for _, enc := range []string{"zstd", "br", "gzip"} {
		t.Run(enc, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("Accept-Encoding", enc)
			rec := serve(p, req, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("Content-Length", "9000")
				w.Header().Set("ETag", `"v1"`)
				w.Header().Set("Accept-Ranges", "bytes")
				w.WriteHeader(200)
				_, _ = io.WriteString(w, text)
			})
			h := rec.Header()
			if h.Get("Content-Encoding") != enc || h.Get("Vary") != "Accept-Encoding" || h.Get("Content-Length") != "" ||
				h.Get("Etag") != `W/"v1"` || h.Get("Accept-Ranges") != "" {
				t.Fatalf("headers %v", h)
			}
			if rec.Body.Len() >= len(text)/4 {
				t.Errorf("%s: %d bytes from %d", enc, rec.Body.Len(), len(text))
			}
			if got := decodeBody(t, enc, rec.Body); got != text {
				t.Fatalf("body differs after %s", enc)
			}
		})
	}
}

func TestCompressSkips(t *testing.T) {
	p := New(&config.Compress{Encodings: config.DefaultEncodings, MinResponseBodyBytes: 100, ExcludedContentTypes: []string{"text/event-stream"}}, NewEncoders(DefaultBudget))
	big := strings.Repeat("x", 1000)
	cases := []struct {
		name     string
		method   string
		reqHdr   map[string]string
		status   int
		respHdr  map[string]string
		body     string
		wantVary bool
	}{
		{"HEAD", "HEAD", nil, 200, nil, "", false},
		{"upgrade", "GET", map[string]string{"Upgrade": "websocket"}, 200, nil, big, false},
		{"204", "GET", nil, 204, nil, "", false},
		{"304", "GET", nil, 304, nil, "", false},
		{"206", "GET", nil, 206, map[string]string{"Content-Range": "bytes 0-999/5000"}, big, false},
		{"already encoded", "GET", nil, 200, map[string]string{"Content-Encoding": "br"}, big, false},
		{"excluded type", "GET", nil, 200, map[string]string{"Content-Type": "text/event-stream"}, big, false},
		{"image", "GET", nil, 200, map[string]string{"Content-Type": "image/png"}, big, false},
		{"archive", "GET", nil, 200, map[string]string{"Content-Type": "application/zip"}, big, false},
		{"no-transform", "GET", nil, 200, map[string]string{"Cache-Control": "public, no-transform"}, big, false},
		{"small by length", "GET", nil, 200, map[string]string{"Content-Length": "5"}, "small", true},
		{"small, length unknown", "GET", nil, 200, nil, "small", true},
		{"client accepts none", "GET", map[string]string{"Accept-Encoding": "identity"}, 200, nil, big, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, "/", nil)
			req.Header.Set("Accept-Encoding", "gzip, br, zstd")
			for k, v := range c.reqHdr {
				req.Header.Set(k, v)
			}
			rec := serve(p, req, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range c.respHdr {
					w.Header().Set(k, v)
				}
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, c.body)
			})
			if rec.Code != c.status || rec.Body.String() != c.body {
				t.Fatalf("status %d body %q", rec.Code, rec.Body)
			}
			if ce := rec.Header().Get("Content-Encoding"); ce != c.respHdr["Content-Encoding"] {
				t.Fatalf("Content-Encoding %q", ce)
			}
			if got := rec.Header().Get("Vary") == "Accept-Encoding"; got != c.wantVary {
				t.Errorf("Vary %q", rec.Header().Get("Vary"))
			}
		})
	}
}

// A body of unknown length is held back only up to the minimum: what ends
// below it goes out with its length, what passes it is compressed.
func TestCompressHoldsUpToTheMinimum(t *testing.T) {
	p := New(&config.Compress{Encodings: []string{"gzip"}, MinResponseBodyBytes: 100}, NewEncoders(DefaultBudget))
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := serve(p, req, func(w http.ResponseWriter, r *http.Request) {
		for range 3 {
			_, _ = io.WriteString(w, "0123456789")
		}
	})
	if rec.Header().Get("Content-Length") != "30" || rec.Header().Get("Content-Encoding") != "" || rec.Body.Len() != 30 {
		t.Fatalf("short body: %v %q", rec.Header(), rec.Body)
	}
	rec = serve(p, req, func(w http.ResponseWriter, r *http.Request) {
		for range 30 {
			_, _ = io.WriteString(w, "0123456789")
		}
	})
	if rec.Header().Get("Content-Encoding") != "gzip" || decodeBody(t, "gzip", rec.Body) != strings.Repeat("0123456789", 30) {
		t.Fatalf("long body: %v", rec.Header())
	}
}

// The response streams: an event flushed by the backend reaches the client,
// decompressed, before the backend writes the next one.
func TestCompressStreams(t *testing.T) {
	p := New(&config.Compress{Encodings: []string{"gzip"}, MinResponseBodyBytes: 1024}, NewEncoders(DefaultBudget))
	next := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Serve(w, r, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				_, _ = io.WriteString(w, "data: event\n\n")
				if err := http.NewResponseController(w).Flush(); err != nil {
					t.Errorf("flush: %v", err)
				}
				if i < 2 {
					select {
					case <-next:
					case <-time.After(10 * time.Second):
						t.Error("the client never saw the event")
						return
					}
				}
			}
		}))
	}))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("headers %v", resp.Header)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(zr)
	for i := range 3 {
		line, err := br.ReadString('\n')
		if err != nil || line != "data: event\n" {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
		if i < 2 {
			next <- struct{}{}
		}
	}
}

// gzipCost is one gzip encoder's charge to the budget.
var gzipCost = encoderCost[config.EncodingGzip]

// The budget is the process's, not a route's: encoders held on one route
// leave that much less to every other; past it, responses on any route
// pass uncompressed and whole; an encoder given back is reused, and one
// dropped gives its memory back.
func TestBudgetIsSharedAcrossRoutes(t *testing.T) {
	encs := NewEncoders(3 * gzipCost)
	routeA := New(&config.Compress{Encodings: []string{"gzip"}}, encs)
	routeB := New(&config.Compress{Encodings: []string{"gzip"}}, encs)
	var held []encoder
	for _, p := range []*Policy{routeA, routeA, routeB} {
		e := p.pools["gzip"].get(io.Discard)
		if e == nil {
			t.Fatalf("budget spent after %d encoders, want 3", len(held))
		}
		held = append(held, e)
	}
	if encs.Used() != 3*gzipCost {
		t.Fatalf("used %d, want %d", encs.Used(), 3*gzipCost)
	}
	get := func(p *Policy) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		return serve(p, req, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, text) })
	}
	for name, p := range map[string]*Policy{"A": routeA, "B": routeB} {
		rec := get(p)
		if rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != text {
			t.Fatalf("route %s past the budget: Content-Encoding %q, %d bytes of body, want the text as it is",
				name, rec.Header().Get("Content-Encoding"), rec.Body.Len())
		}
		if rec.Header().Get("Vary") != "Accept-Encoding" {
			t.Fatalf("route %s past the budget: Vary %q", name, rec.Header().Get("Vary"))
		}
	}
	if encs.Refused() != 2 {
		t.Fatalf("%d responses counted as past the budget, want 2", encs.Refused())
	}
	// Route A gives one back: route B compresses with it.
	routeA.pools["gzip"].put(held[0])
	rec := get(routeB)
	if rec.Header().Get("Content-Encoding") != "gzip" || decodeBody(t, "gzip", rec.Body) != text {
		t.Fatalf("after a release: Content-Encoding %q", rec.Header().Get("Content-Encoding"))
	}
	if encs.Used() != 3*gzipCost {
		t.Fatalf("reuse charged again: used %d", encs.Used())
	}
	for _, e := range held[1:] {
		routeB.pools["gzip"].put(e)
	}
	// Past MaxIdle an encoder given back is dropped and uncharged.
	extra := NewEncoders(int64(MaxIdle+2) * gzipCost)
	var es []encoder
	for range MaxIdle + 2 {
		es = append(es, extra.pools["gzip"].get(io.Discard))
	}
	for _, e := range es {
		extra.pools["gzip"].put(e)
	}
	if extra.Used() != MaxIdle*gzipCost || len(extra.pools["gzip"].idle) != MaxIdle {
		t.Fatalf("after giving back %d: used %d, %d idle", MaxIdle+2, extra.Used(), len(extra.pools["gzip"].idle))
	}
}

// Idle encoders of another encoding make room: the budget is not kept by
// encoders nobody uses.
func TestBudgetDropsIdleEncoders(t *testing.T) {
	encs := NewEncoders(encoderCost[config.EncodingZstd])
	z := encs.pools[config.EncodingZstd].get(io.Discard)
	if z == nil {
		t.Fatal("no zstd encoder within its own cost")
	}
	if encs.pools[config.EncodingGzip].get(io.Discard) != nil {
		t.Fatal("a gzip encoder beside an in-use zstd one, past the budget")
	}
	encs.pools[config.EncodingZstd].put(z)
	if encs.pools[config.EncodingGzip].get(io.Discard) == nil {
		t.Fatal("an idle zstd encoder kept the budget from gzip")
	}
	if encs.Used() != gzipCost || len(encs.pools[config.EncodingZstd].idle) != 0 {
		t.Fatalf("used %d, %d zstd idle", encs.Used(), len(encs.pools[config.EncodingZstd].idle))
	}
	// A budget of 0 compresses nothing.
	none := New(&config.Compress{Encodings: []string{"gzip"}}, NewEncoders(0))
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := serve(none, req, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, text) })
	if rec.Header().Get("Content-Encoding") != "" || rec.Body.String() != text {
		t.Fatalf("budget 0: %v", rec.Header())
	}
}

// A handler that aborts (panics) leaves the pool intact.
func TestCompressAbortReturnsTheEncoder(t *testing.T) {
	p := New(&config.Compress{Encodings: []string{"gzip"}}, NewEncoders(DefaultBudget))
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	func() {
		defer func() { _ = recover() }()
		serve(p, req, func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, text)
			panic(http.ErrAbortHandler)
		})
	}()
	if used, idle := p.pools["gzip"].set.Used(), len(p.pools["gzip"].idle); used != gzipCost || idle != 1 {
		t.Fatalf("used %d idle %d", used, idle)
	}
}

// BenchmarkCompress measures the throughput of each encoding on a 256 KiB
// text body (MB/s of input), through the policy to a discarding writer.
func BenchmarkCompress(b *testing.B) {
	body := jsonBody(256 << 10)
	for _, enc := range []string{"gzip", "br", "zstd"} {
		b.Run(enc, func(b *testing.B) {
			p := New(&config.Compress{Encodings: []string{enc}, MinResponseBodyBytes: 1024}, NewEncoders(DefaultBudget))
			req := httptest.NewRequest("GET", "/", nil)
			req.Header.Set("Accept-Encoding", enc)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				for off := 0; off < len(body); off += 32 << 10 {
					_, _ = w.Write(body[off:min(off+32<<10, len(body))])
				}
			})
			w := &discard{h: http.Header{}}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				w.n = 0
				p.Serve(w, req, h)
			}
			b.ReportMetric(float64(len(body))/float64(w.n), "ratio")
		})
	}
}

// jsonBody is n bytes of JSON lines with varied values, compressible as an
// API's answers are (about 4:1 with gzip), not as a repeated string is.
func jsonBody(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("edge proxy levee route backend breaker health policy header compress stream client server request response")
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, `{"id":%d,"name":%q,"score":%.4f,"tags":[%q,%q],"ok":%t}`+"\n",
			rng.IntN(1_000_000), words[rng.IntN(len(words))]+strconv.Itoa(rng.IntN(1000)), rng.Float64(),
			words[rng.IntN(len(words))], words[rng.IntN(len(words))], rng.IntN(2) == 0)
	}
	return b.Bytes()[:n]
}

// BenchmarkCompressSkipped is the cost of the policy on a response it
// leaves alone (a small JSON answer).
func BenchmarkCompressSkipped(b *testing.B) {
	p := New(defaults(), NewEncoders(DefaultBudget))
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Length"] = []string{"2"}
		_, _ = w.Write([]byte("{}"))
	})
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		p.Serve(w, req, h)
	}
}

type discard struct {
	h http.Header
	n int
}

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }
func (w *discard) WriteHeader(int)             {}
