package api

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkWriteAt10k is one PUT of an API entrypoint while 10,000 API
// entrypoints are loaded (a single write at 10,000 routes).
func BenchmarkWriteAt10k(b *testing.B) {
	h := newRealHarness(b, filepath.Join(b.TempDir(), "state.json"))
	var ops []string
	for i := range 10_000 {
		ops = append(ops, fmt.Sprintf(`{"op":"create","entrypoint":{"name":"r%d","backends":[{"address":"127.0.0.1","port":8080}],"config":{"hostnames":["r%d.test"]}}}`, i, i))
	}
	rec := h.do("POST", "/entrypoints/bulk", "application/json", `{"operations":[`+strings.Join(ops, ",")+`]}`)
	if rec.Code != http.StatusOK && rec.Code != http.StatusCreated {
		b.Fatalf("bulk load: %d %s", rec.Code, rec.Body.String()[:200])
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		id := fmt.Sprintf("r%d", n%10)
		body := fmt.Sprintf(`{"name":"%s","backends":[{"address":"127.0.0.1","port":%d}],"config":{"hostnames":["%s.test"]}}`, id, 18000+n%900, id)
		rec := h.do("PUT", "/entrypoints/"+id, "application/json", body)
		if rec.Code != http.StatusOK {
			b.Fatalf("PUT: %d %s", rec.Code, rec.Body)
		}
	}
}
