package basicauth

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/internal/policytest"
)

func line(t testing.TB, user, pass string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pass), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return user + ":" + string(h)
}

func withAuth(user, pass string) *http.Request {
	r := policytest.Request("192.0.2.1:1")
	r.SetBasicAuth(user, pass)
	return r
}

// Hashes of "s3cret" as htpasswd writes them: -nb (apr1, by openssl
// passwd -apr1) and -nbs ({SHA}).
const (
	apr1Line = "ann:$apr1$H6uskkkW$5ZFNT.MKp/uF5QZ.U5Pld0"
	shaLine  = "sam:{SHA}/vNB+F2HQ559kaLUZbmHHvZrXpg="
)

func TestBasicAuth(t *testing.T) {
	users := []string{line(t, "admin", "s3cret"), line(t, "bob", "hunter2")}
	// A well-formed bcrypt hash of cost 31: one check would take minutes.
	cost31 := strings.Replace(line(t, "big", "x"), "$04$", "$31$", 1)
	dir := t.TempDir()
	goodFile := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(goodFile, []byte("# users\n\n"+line(t, "carol", "pw")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badFile := filepath.Join(dir, "bad")
	if err := os.WriteFile(badFile, []byte("dave:$1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		cfg     config.BasicAuth
		req     *http.Request
		want    int
		reason  string
		compile bool
	}{
		{name: "valid", cfg: config.BasicAuth{Users: users}, req: withAuth("admin", "s3cret"), want: 200},
		{name: "second user", cfg: config.BasicAuth{Users: users}, req: withAuth("bob", "hunter2"), want: 200},
		{name: "wrong password", cfg: config.BasicAuth{Users: users}, req: withAuth("admin", "nope"), want: 401, reason: policy.ReasonUnauthorized},
		{name: "unknown user", cfg: config.BasicAuth{Users: users}, req: withAuth("eve", "s3cret"), want: 401, reason: policy.ReasonUnauthorized},
		{name: "no credentials", cfg: config.BasicAuth{Users: users}, req: policytest.Request("192.0.2.1:1"), want: 401, reason: policy.ReasonUnauthorized},
		{name: "other scheme", cfg: config.BasicAuth{Users: users}, req: func() *http.Request {
			r := policytest.Request("192.0.2.1:1")
			r.Header.Set("Authorization", "Bearer x")
			return r
		}(), want: 401, reason: policy.ReasonUnauthorized},
		{name: "users file", cfg: config.BasicAuth{UsersFile: goodFile}, req: withAuth("carol", "pw"), want: 200},
		{name: "users and file", cfg: config.BasicAuth{Users: users, UsersFile: goodFile}, req: withAuth("admin", "s3cret"), want: 200},
		{name: "md5-crypt line denies all", cfg: config.BasicAuth{Users: append([]string{"x:$1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"}, users...)}, req: withAuth("admin", "s3cret"), want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
		{name: "plain text denies all", cfg: config.BasicAuth{Users: []string{"admin:s3cret"}}, req: withAuth("admin", "s3cret"), want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
		{name: "non-bcrypt file denies all", cfg: config.BasicAuth{Users: users, UsersFile: badFile}, req: withAuth("admin", "s3cret"), want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
		{name: "missing file denies all", cfg: config.BasicAuth{Users: users, UsersFile: filepath.Join(dir, "none")}, req: withAuth("admin", "s3cret"), want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
		{name: "apr1", cfg: config.BasicAuth{Users: []string{apr1Line}}, req: withAuth("ann", "s3cret"), want: 200},
		{name: "apr1 wrong password", cfg: config.BasicAuth{Users: []string{apr1Line}}, req: withAuth("ann", "s3cre"), want: 401, reason: policy.ReasonUnauthorized},
		{name: "sha", cfg: config.BasicAuth{Users: []string{shaLine}}, req: withAuth("sam", "s3cret"), want: 200},
		{name: "sha wrong password", cfg: config.BasicAuth{Users: []string{shaLine}}, req: withAuth("sam", "x"), want: 401, reason: policy.ReasonUnauthorized},
		{name: "bcrypt cost above the maximum denies all", cfg: config.BasicAuth{Users: append([]string{cost31}, users...)}, req: withAuth("admin", "s3cret"), want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
		{name: "no users denies all", cfg: config.BasicAuth{}, req: withAuth("admin", "s3cret"), want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &policytest.Recorder{}
			p, _, err := New(&c.cfg, NewCache(), NewSlots(1, 0), policy.Env{Route: "r", Rec: rec})
			if (err != nil) != c.compile {
				t.Fatalf("compile error %v, want error %v", err, c.compile)
			}
			res := policytest.Run(p, c.req)
			if res.Code != c.want || res.Reached != (c.want == 200) {
				t.Fatalf("status %d reached %v, want %d", res.Code, res.Reached, c.want)
			}
			if c.reason != "" && (res.Header.Get(policy.HeaderDiagnostic) != c.reason || rec.Count() != 1) {
				t.Fatalf("diagnostic %q counted %v", res.Header.Get(policy.HeaderDiagnostic), rec.Got)
			}
			if c.want == 401 && res.Header.Get("WWW-Authenticate") != `Basic realm="levee", charset="UTF-8"` {
				t.Fatalf("challenge %q", res.Header.Get("WWW-Authenticate"))
			}
		})
	}
}

func TestRealmAndRemoveHeader(t *testing.T) {
	p, _, err := New(&config.BasicAuth{Users: []string{line(t, "a", "b")}, Realm: "admin area", RemoveHeader: true}, NewCache(), NewSlots(1, 0), policy.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if res := policytest.Run(p, policytest.Request("192.0.2.1:1")); res.Header.Get("WWW-Authenticate") != `Basic realm="admin area", charset="UTF-8"` {
		t.Fatalf("challenge %q", res.Header.Get("WWW-Authenticate"))
	}
	res := policytest.Run(p, withAuth("a", "b"))
	if !res.Reached || res.Request.Header.Get("Authorization") != "" {
		t.Fatalf("Authorization reached the backend: %v", res.Request.Header)
	}
}

// The cache lets a client in without bcrypt once it verified, never lets
// in a password that no longer matches, and stays within its bound.
func TestCache(t *testing.T) {
	cache := NewCache()
	p, _, _ := New(&config.BasicAuth{Users: []string{line(t, "admin", "old")}}, cache, NewSlots(1, 0), policy.Env{})
	if res := policytest.Run(p, withAuth("admin", "old")); res.Code != 200 || cache.Len() != 1 {
		t.Fatalf("first: %d, cache %d", res.Code, cache.Len())
	}
	if res := policytest.Run(p, withAuth("admin", "wrong")); res.Code != 401 || cache.Len() != 1 {
		t.Fatalf("a failure was cached: %d, cache %d", res.Code, cache.Len())
	}
	// The password changed: the same cache (route state) must not let the
	// old one in.
	p2, _, _ := New(&config.BasicAuth{Users: []string{line(t, "admin", "new")}}, cache, NewSlots(1, 0), policy.Env{})
	if res := policytest.Run(p2, withAuth("admin", "old")); res.Code != 401 {
		t.Fatalf("old password let in from the cache: %d", res.Code)
	}
	if res := policytest.Run(p2, withAuth("admin", "new")); res.Code != 200 {
		t.Fatalf("new password: %d", res.Code)
	}
	// The user was removed.
	p3, _, _ := New(&config.BasicAuth{Users: []string{line(t, "other", "x")}}, cache, NewSlots(1, 0), policy.Env{})
	if res := policytest.Run(p3, withAuth("admin", "new")); res.Code != 401 {
		t.Fatalf("removed user let in from the cache: %d", res.Code)
	}
	// The bound.
	for i := range MaxCached + 10 {
		cache.add(cache.digest("u", string(rune(i))), "h")
		if cache.Len() > MaxCached {
			t.Fatalf("cache holds %d > %d", cache.Len(), MaxCached)
		}
	}
}

// BenchmarkBasicAuth: "cached" is a keep-alive client's steady state;
// "bcrypt" is the cost without the cache (cost 10, htpasswd -B's
// default).
func BenchmarkBasicAuth(b *testing.B) {
	h, _ := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.DefaultCost)
	users := []string{"admin:" + string(h)}
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.Run("cached", func(b *testing.B) {
		p, _, _ := New(&config.BasicAuth{Users: users}, NewCache(), NewSlots(1, 0), policy.Env{})
		r := withAuth("admin", "s3cret")
		p.Serve(nil, r, next)
		b.ReportAllocs()
		for b.Loop() {
			p.Serve(nil, r, next)
		}
	})
	b.Run("bcrypt", func(b *testing.B) {
		p, _, _ := New(&config.BasicAuth{Users: users}, NewCache(), NewSlots(1, 0), policy.Env{})
		r := withAuth("admin", "s3cret")
		b.ReportAllocs()
		for b.Loop() {
			clear(p.cache.ok)
			p.Serve(nil, r, next)
		}
	})
}
