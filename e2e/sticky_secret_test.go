package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The sticky cookie through the binary, without Docker: its id is not the
// unkeyed SHA-256 of route and address (which a client inverts by hashing
// candidate addresses); two processes given the same --sticky-secret
// honour each other's cookies (a fleet), one with another secret does not
// and simply picks anew; a cookie of the unkeyed scheme is no cookie.
func TestStickySecretThroughTheBinary(t *testing.T) {
	var addrs []string
	for _, name := range []string{"a", "b"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"name":%q}`, name)
		}))
		defer srv.Close()
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	var backends []string
	for _, a := range addrs {
		h, p, _ := net.SplitHostPort(a)
		backends = append(backends, fmt.Sprintf(`{"address":%q,"port":%s}`, h, p))
	}
	payload := `{"name":"sticky","backends":[` + strings.Join(backends, ",") +
		`],"config":{"hostnames":["sticky.test"],"sticky":{"enabled":true,"cookie_name":"srv"}}}`
	const secret = "q8Vd2Yc4mX0pL7sT1nB5rZ9wK3hJ6fGa"
	one := startLevee(t, "--docker=false", "--sticky-secret", secret)
	two := startLevee(t, "--docker=false", "--sticky-secret", secret)
	other := startLevee(t, "--docker=false", "--sticky-secret", "another fleet's secret, 32 chars")
	for _, p := range []*leveeProc{one, two, other} {
		createEntrypoint(t, p, payload)
	}

	name, cookie, err := stickyGet(one, "sticky.test", "")
	if err != nil || cookie == "" {
		t.Fatalf("first request: %q %q %v", name, cookie, err)
	}
	for _, a := range addrs {
		sum := sha256.Sum256([]byte("sticky\x00" + a))
		if cookie == "srv="+hex.EncodeToString(sum[:8]) {
			t.Fatalf("the cookie %q is the unkeyed SHA-256 of %s", cookie, a)
		}
	}
	for range 4 {
		got, again, err := stickyGet(two, "sticky.test", cookie)
		if err != nil || got != name || again != "" {
			t.Fatalf("same secret: %q (want %q), new cookie %q, %v", got, name, again, err)
		}
	}
	if got, again, err := stickyGet(other, "sticky.test", cookie); err != nil || got == "" || again == "" || again == cookie {
		t.Fatalf("another secret: %q, new cookie %q (old %q), %v; want a new pick and cookie", got, again, cookie, err)
	}
	sum := sha256.Sum256([]byte("sticky\x00" + addrs[0]))
	unkeyed := "srv=" + hex.EncodeToString(sum[:8])
	if got, again, err := stickyGet(one, "sticky.test", unkeyed); err != nil || got == "" || again == "" || again == unkeyed {
		t.Fatalf("unkeyed cookie: %q, new cookie %q, %v; want a new pick and cookie", got, again, err)
	}
}
