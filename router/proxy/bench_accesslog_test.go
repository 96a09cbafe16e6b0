package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// BenchmarkServeHTTPAccessLog is BenchmarkServeHTTP with the access log
// on, as levee serve runs by default: JSON lines through the logger.
func BenchmarkServeHTTPAccessLog(b *testing.B) {
	r := router.New(router.Options{Logger: zerolog.Nop()})
	b.Cleanup(r.Close)
	p := New(r, Options{Logger: zerolog.New(io.Discard), AccessLog: true})
	b.Cleanup(p.Close)
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep("bench", benchBackend(b))}})
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "http://bench.test/path?q=1", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		clear(w.h)
		p.ServeHTTP(w, req)
	}
}

// BenchmarkServeHTTPAccessLogCombined is the same with Combined lines
// written to a writer (as to --access-log-file).
func BenchmarkServeHTTPAccessLogCombined(b *testing.B) {
	r := router.New(router.Options{Logger: zerolog.Nop()})
	b.Cleanup(r.Close)
	p := New(r, Options{Logger: zerolog.Nop(), AccessLog: true, AccessLogFormat: AccessLogCombined, AccessLogOut: io.Discard})
	b.Cleanup(p.Close)
	r.Update(config.SourceUpdate{Source: config.SourceAPI, Entrypoints: []config.Entrypoint{ep("bench", benchBackend(b))}})
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "http://bench.test/path?q=1", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		req.Header["User-Agent"] = []string{"bench/1.0"}
		clear(w.h)
		p.ServeHTTP(w, req)
	}
}
