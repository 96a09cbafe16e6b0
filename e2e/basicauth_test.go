package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/e2e/dockertest"
	"github.com/levee-proxy/levee/e2e/leveetest"
)

// A Traefik user's basic-auth label with the apr1 hash `htpasswd -nb`
// writes works through the binary, with W055 saying it is weak; wrong
// passwords from one address spend its failure budget, after which it is
// refused without a check (429 auth-throttled, never the backend), while
// the right password, verified before, still gets in.
func TestDockerBasicAuthApr1AndFailureBudget(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	host := "apr1-" + dockertest.RunID(t) + ".test"
	// openssl passwd -apr1 -salt H6uskkkW s3cret; a label set through the
	// Engine's API takes the hash as written (no compose $$).
	const users = "admin:$apr1$H6uskkkW$5ZFNT.MKp/uF5QZ.U5Pld0"

	p := startLevee(t)
	dockertest.Run(t, cli, echoSpec(image, network, "apr1", host, map[string]string{"levee.http.app.basicAuth.users": users}))

	client := &http.Client{Timeout: 10 * time.Second}
	authed := func(user, pass string) (int, http.Header, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/", nil)
		req.Host = host
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	// Until the route is there, and the echo server listening (a refused
	// connection ejects it for a while), the right password is not answered
	// by the backend. A route that refused apr1 would deny it for good (403
	// policy-misconfigured).
	dockertest.Eventually(t, 40*time.Second, func() error {
		if code, hdr, body := authed("admin", "s3cret"); code != http.StatusOK || !strings.Contains(body, `"apr1"`) {
			return fmt.Errorf("apr1 password: %d %q %q", code, hdr.Get("X-Levee-Diagnostic"), body)
		}
		return nil
	})
	if code, hdr, _ := authed("", ""); code != http.StatusUnauthorized || hdr.Get("X-Levee-Diagnostic") != "unauthorized" {
		t.Fatalf("no credentials: %d %v", code, hdr)
	}
	line := p.waitLog(10*time.Second, func(l map[string]any) bool { return l["code"] == "W055" })
	if line["key"] != "levee.http.app.basicAuth.users" || !strings.Contains(fmt.Sprint(line["hint"]), "htpasswd -nbB") {
		t.Fatalf("W055 line: %v", line)
	}

	const budget = 10 // basicauth.FailureBurst
	for i := range budget {
		if code, _, _ := authed("admin", fmt.Sprintf("guess-%d", i)); code != http.StatusUnauthorized {
			t.Fatalf("wrong password %d: %d, want 401", i, code)
		}
	}
	code, hdr, body := authed("admin", "one-more")
	if code != http.StatusTooManyRequests || hdr.Get("X-Levee-Diagnostic") != "auth-throttled" || hdr.Get("Retry-After") == "" || strings.Contains(body, `"apr1"`) {
		t.Fatalf("over the failure budget: %d %v %q", code, hdr, body)
	}
	if code, _, body := authed("admin", "s3cret"); code != http.StatusOK || !strings.Contains(body, `"apr1"`) {
		t.Fatalf("verified password over the budget: %d %q", code, body)
	}
	_, _, metrics := get(t, p.apiURL()+"/metrics", "")
	if !strings.Contains(metrics, `levee_policy_refusals_total{policy="basic-auth",reason="auth-throttled",route=`) {
		t.Errorf("metrics lack the auth-throttled refusal")
	}
}

// Wrong passwords from many addresses at once (so that no per-client
// budget applies) run through the binary's process-wide password-check
// slots: with GOMAXPROCS=2 there is one, so of 32 concurrent cost-11
// checks only those that get the slot within 1 s run; the others are
// refused 503 auth-busy with Retry-After: 1, and none of them reaches the
// backend.
func TestAuthFloodWaitsForTheProcessSlots(t *testing.T) {
	var reached atomic.Int32
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached.Add(1)
		_, _ = io.WriteString(w, "backend\n")
	}))
	defer backend.Close()
	proc := leveetest.Start(t, leveeBinary, leveetest.Options{
		Args:            []string{"--docker=false", "--state-file", filepath.Join(t.TempDir(), "state.json")},
		Env:             []string{"GOMAXPROCS=2"},
		InheritLeveeEnv: true,
	})
	p := &leveeProc{Proc: proc, t: t}
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), 11)
	if err != nil {
		t.Fatal(err)
	}
	port := strings.TrimPrefix(backend.URL, "http://127.0.0.1:")
	createEntrypoint(t, p, `{"name":"flood","backends":[{"address":"127.0.0.1","port":`+port+`}],"config":{"hostnames":["flood.test"],"basic_auth":{"users":["admin:`+string(hash)+`"]}}}`)

	send := func(i int) (int, http.Header, error) {
		local := &net.TCPAddr{IP: net.IPv4(127, 1, 0, byte(i+1))}
		c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext:       (&net.Dialer{LocalAddr: local}).DialContext,
		}}
		req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/", nil)
		req.Host = "flood.test"
		req.SetBasicAuth("admin", fmt.Sprintf("guess-%d", i))
		resp, err := c.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header, nil
	}
	dockertest.Eventually(t, 30*time.Second, func() error {
		if code, _, err := send(200); err != nil || code != http.StatusUnauthorized {
			return fmt.Errorf("route: %d %v", code, err)
		}
		return nil
	})

	const n = 32
	type answer struct {
		code int
		hdr  http.Header
		err  error
	}
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			code, hdr, err := send(i)
			answers[i] = answer{code, hdr, err}
		})
	}
	wg.Wait()
	busy := 0
	for i, a := range answers {
		switch {
		case a.err != nil:
			t.Fatalf("request %d: %v", i, a.err)
		case a.code == http.StatusServiceUnavailable:
			busy++
			if a.hdr.Get("X-Levee-Diagnostic") != "auth-busy" || a.hdr.Get("Retry-After") != "1" {
				t.Errorf("503 without auth-busy and Retry-After: 1: %v", a.hdr)
			}
		case a.code != http.StatusUnauthorized:
			t.Errorf("request %d: %d %v", i, a.code, a.hdr)
		}
	}
	t.Logf("%d of %d concurrent wrong passwords refused 503 auth-busy", busy, n)
	// A cost-11 check takes over 100 ms of a core, so the one slot runs at
	// most about ten within its 1 s wait.
	if busy < n/3 {
		t.Fatalf("%d of %d concurrent checks refused as busy, want most: the checks were not bounded", busy, n)
	}
	if got := reached.Load(); got != 0 {
		t.Fatalf("%d refused requests reached the backend", got)
	}
}
