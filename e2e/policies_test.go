package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// A labelled container with several access policies at once,
// written as a Traefik user would (basic auth, IP allow-list, rate
// limit), through the binary on the real engine: each refusal carries its
// X-Levee-Diagnostic and is counted in levee_policy_refusals_total; a
// second service of the same container whose allow-list excludes the
// client is refused, and a bad CIDR denies rather than allows.
func TestDockerI14AccessPolicies(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	id := dockertest.RunID(t)
	host := "i14-auth-" + id + ".test"
	fenced := "i14-fenced-" + id + ".test"
	broken := "i14-broken-" + id + ".test"
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}

	p := startLevee(t)
	spec := echoSpec(image, network, "guarded", host, map[string]string{
		"levee.http.app.basicAuth.users":         "admin:" + string(hash),
		"levee.http.app.basicAuth.realm":         "i14",
		"levee.http.app.ipAllowList.sourceRange": "127.0.0.0/8, ::1",
		"levee.http.app.rateLimit.average":       "3",
		"levee.http.app.rateLimit.period":        "1h",
		"levee.http.app.rateLimit.burst":         "4",
		// Another service of the same container: the client is not in its
		// allow-list.
		"levee.http.fenced.host":                    fenced,
		"levee.http.fenced.ipAllowList.sourceRange": "192.0.2.0/24",
		// And one whose allow-list has a typo: it denies everyone.
		"levee.http.broken.host":                    broken,
		"levee.http.broken.ipAllowList.sourceRange": "127.0.0.0/33",
	})
	dockertest.Run(t, cli, spec)

	authed := func(h, user, pass string) (int, http.Header, string) {
		req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/", nil)
		req.Host = h
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	// Wait for the route: the policy answers (401) once it exists.
	dockertest.Eventually(t, 20*time.Second, func() error {
		if code, hdr, _ := authed(host, "", ""); code != http.StatusUnauthorized {
			return fmt.Errorf("status %d %q, want 401", code, hdr.Get("X-Levee-Diagnostic"))
		}
		return nil
	})

	code, hdr, _ := authed(host, "", "")
	if hdr.Get("X-Levee-Diagnostic") != "unauthorized" || hdr.Get("WWW-Authenticate") != `Basic realm="i14", charset="UTF-8"` {
		t.Fatalf("no credentials: %d %v", code, hdr)
	}
	if code, hdr, _ = authed(host, "admin", "wrong"); code != http.StatusUnauthorized || hdr.Get("X-Levee-Diagnostic") != "unauthorized" {
		t.Fatalf("wrong password: %d %v", code, hdr)
	}
	// The rate limit comes before auth: the three refused requests above
	// (the wait's, no credentials, wrong password) took a token each. One
	// more is let through, then 429.
	code, _, body := authed(host, "admin", "s3cret")
	if code != http.StatusOK || !strings.Contains(body, `"guarded"`) {
		t.Fatalf("valid credentials: %d %q", code, body)
	}
	code, hdr, _ = authed(host, "admin", "s3cret")
	if code != http.StatusTooManyRequests || hdr.Get("X-Levee-Diagnostic") != "rate-limited" || hdr.Get("Retry-After") == "" ||
		hdr.Get("RateLimit-Policy") != `"levee";q=3;w=3600` || !strings.HasPrefix(hdr.Get("RateLimit"), `"levee";r=0;t=`) {
		t.Fatalf("over the limit: %d %v", code, hdr)
	}
	dockertest.Eventually(t, 20*time.Second, func() error {
		if code, hdr, _ := authed(fenced, "", ""); code != http.StatusForbidden || hdr.Get("X-Levee-Diagnostic") != "forbidden-ip" {
			return fmt.Errorf("fenced: %d %q", code, hdr.Get("X-Levee-Diagnostic"))
		}
		return nil
	})
	if code, hdr, _ := authed(broken, "", ""); code != http.StatusForbidden || hdr.Get("X-Levee-Diagnostic") != "policy-misconfigured" {
		t.Fatalf("broken allow-list: %d %v", code, hdr)
	}
	line := p.waitLog(10*time.Second, func(l map[string]any) bool { return l["code"] == "W052" && l["value"] == "127.0.0.0/33" })
	if line["key"] != "levee.http.broken.ipAllowList.sourceRange" {
		t.Fatalf("W052 line: %v", line)
	}

	_, _, metrics := get(t, p.apiURL()+"/metrics", "")
	for _, want := range []string{
		`levee_policy_refusals_total{policy="basic-auth",reason="unauthorized",route=`,
		`levee_policy_refusals_total{policy="rate-limit",reason="rate-limited",route=`,
		`levee_policy_refusals_total{policy="ip-allow-list",reason="forbidden-ip",route=`,
		`levee_policy_refusals_total{policy="ip-allow-list",reason="policy-misconfigured",route=`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// Forward auth and the in-flight limit through the binary. The
// auth service runs in the test process (Levee runs on the host too); a
// second service of the echo container without policies steers it.
func TestDockerI14ForwardAuthAndInFlight(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	id := dockertest.RunID(t)
	guarded := "i14-fwd-" + id + ".test"
	ctl := "i14-ctl-" + id + ".test"
	down := "i14-down-" + id + ".test"

	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer good" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="i14"`)
			http.Error(w, "auth says no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("X-Auth-User", "alice")
	}))
	t.Cleanup(auth.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close() // nothing listens there any more

	p := startLevee(t)
	dockertest.Run(t, cli, echoSpec(image, network, "fwd", guarded, map[string]string{
		"levee.http.app.forwardAuth.address":             auth.URL + "/verify",
		"levee.http.app.forwardAuth.authResponseHeaders": "X-Auth-User",
		"levee.http.app.inFlight.amount":                 "1",
		"levee.http.ctl.host":                            ctl,
		"levee.http.down.host":                           down,
		"levee.http.down.forwardAuth.address":            closedURL + "/verify",
		"levee.http.down.forwardAuth.timeout":            "2s",
	}))
	do := func(method, host, path, token string) (int, http.Header, string) {
		req, _ := http.NewRequest(method, p.proxyURL()+path, nil)
		req.Host = host
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("X-Auth-User", "mallory") // never reaches the backend
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
		if err != nil {
			return 0, nil, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	dockertest.Eventually(t, 20*time.Second, func() error {
		if code, _, body := do("GET", ctl, "/", ""); code != http.StatusOK {
			return fmt.Errorf("control service: %d %s", code, body)
		}
		return nil
	})

	code, hdr, body := do("GET", guarded, "/", "bad")
	if code != http.StatusUnauthorized || hdr.Get("X-Levee-Diagnostic") != "unauthorized" ||
		hdr.Get("WWW-Authenticate") != `Bearer realm="i14"` || !strings.Contains(body, "auth says no") {
		t.Fatalf("refused by the auth service: %d %v %q", code, hdr, body)
	}
	code, _, body = do("GET", guarded, "/", "good")
	if code != http.StatusOK || !strings.Contains(body, "alice") || strings.Contains(body, "mallory") {
		t.Fatalf("let through: %d %s", code, body)
	}
	if code, hdr, _ := do("GET", down, "/", "good"); code != http.StatusServiceUnavailable || hdr.Get("X-Levee-Diagnostic") != "auth-unavailable" {
		t.Fatalf("auth service down: %d %v", code, hdr)
	}

	// One request held by the backend; the next one of the same client is
	// over inFlight.amount=1.
	if code, _, body := do("POST", ctl, "/_echo/hang", ""); code != http.StatusOK {
		t.Fatalf("hang: %d %s", code, body)
	}
	held := make(chan int, 1)
	go func() {
		code, _, _ := do("GET", guarded, "/", "good")
		held <- code
	}()
	dockertest.Eventually(t, 10*time.Second, func() error {
		_, _, state := do("GET", ctl, "/_echo/state", "")
		if !strings.Contains(strings.Join(strings.Fields(state), ""), `"held":1`) {
			return fmt.Errorf("echo state %s", state)
		}
		return nil
	})
	code, hdr, _ = do("GET", guarded, "/", "good")
	if code != http.StatusTooManyRequests || hdr.Get("X-Levee-Diagnostic") != "too-many-in-flight" || hdr.Get("Retry-After") != "1" {
		t.Fatalf("over the in-flight limit: %d %v", code, hdr)
	}
	if code, _, body := do("POST", ctl, "/_echo/ok", ""); code != http.StatusOK {
		t.Fatalf("ok: %d %s", code, body)
	}
	if code := <-held; code != http.StatusOK {
		t.Fatalf("held request: %d", code)
	}
	if code, _, _ := do("GET", guarded, "/", "good"); code != http.StatusOK {
		t.Fatalf("after release: %d", code)
	}

	_, _, metrics := get(t, p.apiURL()+"/metrics", "")
	for _, want := range []string{
		`levee_policy_refusals_total{policy="forward-auth",reason="unauthorized",route=`,
		`levee_policy_refusals_total{policy="forward-auth",reason="auth-unavailable",route=`,
		`levee_policy_refusals_total{policy="in-flight",reason="too-many-in-flight",route=`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}
