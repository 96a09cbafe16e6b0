package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"testing"
)

func TestJSONBody(t *testing.T) {
	b := JSONBody(16 << 10)
	if len(b) < 16<<10 || len(b) > 16<<10+256 {
		t.Fatalf("len %d, want about 16 KiB", len(b))
	}
	var v []map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if !bytes.Equal(b, JSONBody(16<<10)) {
		t.Fatal("not deterministic")
	}
	var z bytes.Buffer
	w, _ := gzip.NewWriterLevel(&z, 5)
	w.Write(b)
	w.Close()
	if r := float64(z.Len()) / float64(len(b)); r < 0.05 || r > 0.5 {
		t.Errorf("gzip ratio %.2f: not like an API answer", r)
	}
	t.Logf("%d bytes, gzip -5: %d (%.2f)", len(b), z.Len(), float64(z.Len())/float64(len(b)))
}
