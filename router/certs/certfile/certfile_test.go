package certfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestParsePair(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Pair
		ok   bool
	}{
		{"/le/fullchain.pem,/le/privkey.pem", Pair{"/le/fullchain.pem", "/le/privkey.pem"}, true},
		{" /both.pem ", Pair{Cert: "/both.pem"}, true},
		{"", Pair{}, false},
		{"/a.pem,", Pair{}, false},
		{",/a.key", Pair{}, false},
		{"/a,/b,/c", Pair{}, false},
	} {
		got, err := ParsePair(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParsePair(%q) = %+v, %v; want %+v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// A signature changes when a file changes or goes, and not otherwise.
func TestSignatureFollowsTheFiles(t *testing.T) {
	dir := t.TempDir()
	cert := filepath.Join(dir, "c.pem")
	if err := os.WriteFile(cert, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	pairs := []Pair{{Cert: cert}}
	a := Signature(pairs)
	if Signature(pairs) != a {
		t.Fatal("two signatures of unchanged files differ")
	}
	if err := os.WriteFile(cert, []byte("three"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := Signature(pairs)
	if b == a {
		t.Error("the signature did not change with the file's size")
	}
	if err := os.Remove(cert); err != nil {
		t.Fatal(err)
	}
	if c := Signature(pairs); c == b {
		t.Error("the signature did not change when the file went")
	}
}
