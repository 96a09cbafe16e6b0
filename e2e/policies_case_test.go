package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// Access-policy keys in Traefik's lower case configure the policy, and a
// key Levee cannot read under an access policy (or a misspelled policy
// name) makes the route deny every request, through the binary on the real
// engine: never served open.
func TestDockerAccessKeysInAnyCaseAndUnreadKeysDeny(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	id := dockertest.RunID(t)
	lc, typo, mis := "lc-"+id+".test", "typo-"+id+".test", "mis-"+id+".test"
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	p := startLevee(t)
	dockertest.Run(t, cli, echoSpec(image, network, "lc", lc, map[string]string{
		// As docs/migrating.md prints Traefik's keys.
		"levee.http.app.basicauth.users":   "admin:" + string(hash),
		"levee.http.app.ratelimit.average": "1",
		"levee.http.app.ratelimit.period":  "1h",
		"levee.http.typo.host":             typo,
		"levee.http.typo.basicAuth.userz":  "admin:" + string(hash),
		"levee.http.mis.host":              mis,
		"levee.http.mis.basicAuh.users":    "admin:" + string(hash),
	}))

	// The first request without credentials meets basic auth, the second
	// the rate limit (1 an hour): both policies are on.
	dockertest.Eventually(t, 20*time.Second, func() error {
		if code, hdr, _, err := tryGet(p.proxyURL()+"/", lc); err != nil || code != http.StatusUnauthorized || hdr.Get("X-Levee-Diagnostic") != "unauthorized" {
			return fmt.Errorf("lower-case basicauth: %d %q %v, want 401 unauthorized", code, hdr.Get("X-Levee-Diagnostic"), err)
		}
		return nil
	})
	if code, hdr, _ := get(t, p.proxyURL()+"/", lc); code != http.StatusTooManyRequests || hdr.Get("X-Levee-Diagnostic") != "rate-limited" {
		t.Errorf("lower-case ratelimit: %d %q, want 429 rate-limited", code, hdr.Get("X-Levee-Diagnostic"))
	}
	for _, host := range []string{typo, mis} {
		dockertest.Eventually(t, 20*time.Second, func() error {
			code, hdr, _, err := tryGet(p.proxyURL()+"/", host)
			if err != nil || code != http.StatusForbidden || hdr.Get("X-Levee-Diagnostic") != "policy-misconfigured" {
				return fmt.Errorf("%s: %d %q %v, want 403 policy-misconfigured", host, code, hdr.Get("X-Levee-Diagnostic"), err)
			}
			return nil
		})
	}
	for _, c := range []struct{ code, key string }{
		{"E005", "levee.http.typo.basicAuth.userz"},
		{"E006", "levee.http.mis.basicAuh.users"},
	} {
		p.waitLog(10*time.Second, func(l map[string]any) bool {
			return l["code"] == c.code && l["key"] == c.key && l["level"] == "error"
		})
	}
}

// The same through the API, in JSON and YAML: keys in any case configure
// the policy, an unknown key under basic_auth denies with the header.
func TestAPIAccessKeysInAnyCaseAndUnreadKeysDeny(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "backend") }))
	defer backend.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(backend.URL, "http://"))
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	line := "admin:" + string(hash)
	p := startLevee(t)
	post := func(contentType, body string) {
		t.Helper()
		resp, err := http.Post(p.apiURL()+"/entrypoints", contentType, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s = %d %s", body, resp.StatusCode, b)
		}
	}
	post("application/json", `{"name":"jcase","backends":[{"address":"127.0.0.1","port":`+port+`}],
		"config":{"hostnames":["jcase.test"],"Basic_Auth":{"USERS":["`+line+`"]}}}`)
	post("application/json", `{"name":"jtypo","backends":[{"address":"127.0.0.1","port":`+port+`}],
		"config":{"hostnames":["jtypo.test"],"basic_auth":{"users":["`+line+`"],"userz":"x"}}}`)
	post("application/yaml", "name: ycase\nbackends:\n- address: 127.0.0.1\n  port: "+port+
		"\nconfig:\n  hostnames: [ycase.test]\n  BASIC_AUTH:\n    Users: ['"+line+"']\n")
	post("application/yaml", "name: ytypo\nbackends:\n- address: 127.0.0.1\n  port: "+port+
		"\nconfig:\n  hostnames: [ytypo.test]\n  basic_auth:\n    users: ['"+line+"']\n    realmm: x\n")

	for host, want := range map[string]struct {
		code   int
		reason string
	}{
		"jcase.test": {http.StatusUnauthorized, "unauthorized"},
		"ycase.test": {http.StatusUnauthorized, "unauthorized"},
		"jtypo.test": {http.StatusForbidden, "policy-misconfigured"},
		"ytypo.test": {http.StatusForbidden, "policy-misconfigured"},
	} {
		dockertest.Eventually(t, 10*time.Second, func() error {
			code, hdr, body, err := tryGet(p.proxyURL()+"/", host)
			if err != nil || code != want.code || hdr.Get("X-Levee-Diagnostic") != want.reason {
				return fmt.Errorf("%s: %d %q %q %v, want %d %s", host, code, hdr.Get("X-Levee-Diagnostic"), body, err, want.code, want.reason)
			}
			return nil
		})
	}
}
