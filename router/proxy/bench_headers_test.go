package proxy

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkServeHTTPBrowserHeaders is BenchmarkServeHTTP/no-breaker with
// the fields a browser sends: what the header screen scans on most
// requests.
func BenchmarkServeHTTPBrowserHeaders(b *testing.B) {
	r := benchRouter(b, false)
	w := &discardWriter{h: http.Header{}}
	values := map[string][]string{
		"Accept":                    {"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"},
		"Accept-Encoding":           {"gzip, deflate, br, zstd"},
		"Accept-Language":           {"en-GB,en;q=0.5"},
		"Cookie":                    {"session=0123456789abcdef"},
		"Referer":                   {"http://bench.test/"},
		"Sec-Fetch-Dest":            {"document"},
		"Sec-Fetch-Mode":            {"navigate"},
		"Sec-Fetch-Site":            {"same-origin"},
		"Upgrade-Insecure-Requests": {"1"},
		"User-Agent":                {"Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0"},
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodGet, "http://bench.test/path?q=1", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		for k, v := range values {
			req.Header[k] = v
		}
		clear(w.h)
		r.ServeHTTP(w, req)
	}
}
