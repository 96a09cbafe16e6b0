package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// i18Network creates a bridge network named levee-i18-<run id>, labelled
// for the run's cleanup.
func i18Network(t *testing.T, cli *client.Client) string {
	t.Helper()
	name := "levee-i18-" + dockertest.RunID(t) + "-net"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cli.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: map[string]string{dockertest.Label: dockertest.RunID(t)}}); err != nil {
		t.Fatalf("create network %s: %v", name, err)
	}
	return name
}

// echoAnswer is what cmd/echo answers, as far as these tests read it.
type echoAnswer struct {
	Name    string `json:"name"`
	Request struct {
		Headers map[string][]string `json:"headers"`
	} `json:"request"`
}

// send makes one request through Levee with optional header fields.
func send(t *testing.T, p *leveeProc, method, host, path string, kv ...string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, p.proxyURL()+path, nil)
	req.Host = host
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s%s: %v", method, host, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// control posts to a cmd/echo control endpoint straight to the container,
// not through Levee (whose breaker may be open).
func control(t *testing.T, ip, action string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Post("http://"+ip+":8080/_echo/"+action, "text/plain", nil)
	if err != nil {
		t.Fatalf("echo control %s: %v", action, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("echo control %s: %d", action, resp.StatusCode)
	}
}

// staleEntries is the documented per-route bound of stale answers
// (docs/circuit-breaker.md, "Stale answers").
const staleEntries = 1024

// waitServing waits until the echo container at ip answers by itself, so
// that no request through Levee reaches it before it listens (a refused
// connection is a failure, and these breakers open on very few).
func waitServing(t *testing.T, ip string) {
	t.Helper()
	dockertest.Eventually(t, 30*time.Second, func() error {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get("http://" + ip + ":8080/_echo/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("health %d", resp.StatusCode)
		}
		return nil
	})
}

// The issue-18 scenario through the binary: a labelled service fails, its
// breaker opens, clients get the labelled maintenance service's page with
// the chosen status and Retry-After; the half-open probes still reach the
// failing service, and once it has recovered traffic switches back. A
// second service on the same container answers stale while open, never
// to a request with credentials.
func TestDockerFallbackToMaintenanceService(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	net := i18Network(t, cli)
	run := dockertest.RunID(t)
	svc := "i18" + strings.ReplaceAll(run, "-", "")
	app, maint, cached := svc+"app", svc+"maint", svc+"cached"
	appHost, maintHost, cachedHost := app+".test", maint+".test", cached+".test"

	p := startLevee(t)
	breakerLabels := func(s string) map[string]string {
		return map[string]string{
			"levee.http." + s + ".circuitBreaker.consecutiveFailures": "3",
			"levee.http." + s + ".circuitBreaker.minRequests":         "100",
			"levee.http." + s + ".circuitBreaker.cooldown":            "3s",
		}
	}
	labels := map[string]string{
		"levee.enable":                                         "true",
		"levee.http." + app + ".host":                          appHost,
		"levee.http." + app + ".circuitBreaker.fallback":       maint,
		"levee.http." + app + ".circuitBreaker.fallbackStatus": "503",
		"levee.http." + cached + ".host":                       cachedHost,
		"levee.http." + cached + ".circuitBreaker.serveStale":  "1m",
	}
	for _, s := range []string{app, cached} {
		for k, v := range breakerLabels(s) {
			labels[k] = v
		}
	}
	failing := dockertest.Run(t, cli, dockertest.Spec{Name: "levee-i18-" + run + "-failing", Image: image, Networks: []string{net},
		Env: []string{"ECHO_NAME=failing"}, Labels: labels})
	dockertest.Run(t, cli, dockertest.Spec{Name: "levee-i18-" + run + "-maintenance", Image: image, Networks: []string{net},
		Env: []string{"ECHO_NAME=maintenance"}, Labels: map[string]string{"levee.enable": "true", "levee.http." + maint + ".host": maintHost}})
	ip := dockertest.IPs(t, cli, failing)[net]
	if ip == "" {
		t.Fatalf("no IP on %s", net)
	}
	waitServing(t, ip)
	for _, h := range []string{appHost, maintHost, cachedHost} {
		dockertest.Eventually(t, 30*time.Second, func() error { _, err := routedBy(p, h); return err })
	}
	// Good answers to remember: more URLs than the per-route bound of
	// 1024 entries (the two oldest go), an answer to a request with
	// credentials (never kept), and the page. Then the failure.
	for i := 0; i <= staleEntries; i++ {
		if code, _, _ := send(t, p, http.MethodGet, cachedHost, "/p/"+strconv.Itoa(i)); code != 200 {
			t.Fatalf("/p/%d: %d", i, code)
		}
	}
	send(t, p, http.MethodGet, cachedHost, "/mine", "Authorization", "Bearer alice")
	if code, _, _ := send(t, p, http.MethodGet, cachedHost, "/page"); code != 200 {
		t.Fatalf("cached page: %d", code)
	}
	control(t, ip, "fail?status=500")

	// The breaker opens after three failures; from then on the fallback
	// answers, with the chosen status and the breaker's Retry-After.
	for i := 0; i < 3; i++ {
		if code, _, _ := send(t, p, http.MethodGet, appHost, "/"); code != 500 {
			t.Fatalf("failure %d: %d, want the service's own 500", i, code)
		}
	}
	code, hdr, body := send(t, p, http.MethodGet, appHost, "/checkout")
	var ans echoAnswer
	_ = json.Unmarshal([]byte(body), &ans)
	if code != 503 || ans.Name != "maintenance" {
		t.Fatalf("while open: %d %q, want the maintenance page with 503", code, body)
	}
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra < 1 || ra > 3 {
		t.Fatalf("Retry-After %q, want 1-3 s", hdr.Get("Retry-After"))
	}
	if hdr.Get("X-Levee-Fallback") != app || strings.Join(ans.Request.Headers["X-Levee-Fallback"], ",") != app {
		t.Fatalf("X-Levee-Fallback: answer %q, request seen by the fallback %q", hdr.Get("X-Levee-Fallback"), ans.Request.Headers["X-Levee-Fallback"])
	}
	// The API's breaker view says where open traffic goes.
	_, _, view := get(t, p.apiURL()+"/breakers/"+app, "")
	if !strings.Contains(view, `"open_traffic":"fallback"`) || !strings.Contains(view, `"fallback":"`+maint+`"`) || !strings.Contains(view, `"state":"open"`) {
		t.Fatalf("breaker view %s", view)
	}
	p.waitLog(10*time.Second, func(l map[string]any) bool { return l["event"] == "fallback_started" && l["route"] == app })

	// The stale answer on the second service, and the credentials rule.
	for i := 0; i < 3; i++ {
		send(t, p, http.MethodGet, cachedHost, "/other")
	}
	code, hdr, body = send(t, p, http.MethodGet, cachedHost, "/page")
	if code != 200 || hdr.Get("X-Levee-Stale") == "" || hdr.Get("Age") == "" || !strings.HasPrefix(hdr.Get("Warning"), "110 ") || !strings.Contains(body, `"failing"`) {
		t.Fatalf("stale answer: %d %v %q", code, hdr, body)
	}
	if code, hdr, _ := send(t, p, http.MethodGet, cachedHost, "/page", "Cookie", "session=1"); code != 503 || hdr.Get("X-Levee-Diagnostic") != "circuit-open" {
		t.Fatalf("a request with a cookie got %d %v, want the open answer", code, hdr)
	}
	for path, want := range map[string]int{"/p/0": 503, "/p/1": 503, "/p/2": 200, "/mine": 503} {
		if code, _, _ := send(t, p, http.MethodGet, cachedHost, path); code != want {
			t.Fatalf("stale %s: %d, want %d (bounds, credentials)", path, code, want)
		}
	}

	// After the cooldown the half-open probe goes to the failing service
	// itself (its own 500, not the maintenance page), re-opens the
	// breaker, and the fallback answers again.
	dockertest.Eventually(t, 10*time.Second, func() error {
		code, hdr, body := send(t, p, http.MethodGet, appHost, "/probe")
		if code != 500 || hdr.Get("X-Levee-Fallback") != "" || !strings.Contains(body, `"failing"`) {
			return fmt.Errorf("no probe yet: %d %q", code, hdr.Get("X-Levee-Fallback"))
		}
		return nil
	})
	if code, hdr, _ := send(t, p, http.MethodGet, appHost, "/"); code != 503 || hdr.Get("X-Levee-Fallback") != app {
		t.Fatalf("after a failed probe: %d %v, want the fallback again", code, hdr)
	}

	// Recovery: the service comes back; after the cooldown the half-open
	// probe goes to it (the only way the breaker can close) and traffic
	// switches back.
	control(t, ip, "ok")
	dockertest.Eventually(t, 20*time.Second, func() error {
		code, hdr, body := send(t, p, http.MethodGet, appHost, "/")
		if code != 200 || hdr.Get("X-Levee-Fallback") != "" || !strings.Contains(body, `"failing"`) {
			return fmt.Errorf("still %d %q %q", code, hdr.Get("X-Levee-Fallback"), body)
		}
		return nil
	})
	p.waitLog(10*time.Second, func(l map[string]any) bool { return l["event"] == "fallback_stopped" && l["route"] == app })
	_, _, metrics := get(t, p.apiURL()+"/metrics", "")
	if !strings.Contains(metrics, `levee_fallback_requests_total{fallback="`+maint+`",kind="route",route="`+app+`"}`) ||
		!strings.Contains(metrics, `levee_fallback_requests_total{fallback="none",kind="stale",route="`+cached+`"}`) {
		t.Fatalf("fallback metrics missing:\n%s", grepLines(metrics, "levee_fallback"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Every bad fallback config gives its diagnostic and the old behaviour:
// while open, the breaker's own 503 circuit-open.
func TestDockerBadFallbackConfigs(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	net := i18Network(t, cli)
	run := dockertest.RunID(t)
	svc := "i18" + strings.ReplaceAll(run, "-", "")
	cases := map[string]struct{ fallback, code string }{
		svc + "unknown": {"nosuch" + svc, "W080"},
		svc + "self":    {svc + "self", "W081"},
		svc + "loopa":   {svc + "loopb", "W082"},
		svc + "loopb":   {svc + "loopa", "W082"},
		svc + "badname": {"two words", "W083"},
	}
	labels := map[string]string{"levee.enable": "true"}
	for s, c := range cases {
		labels["levee.http."+s+".host"] = s + ".test"
		labels["levee.http."+s+".circuitBreaker.fallback"] = c.fallback
		labels["levee.http."+s+".circuitBreaker.consecutiveFailures"] = "1"
		labels["levee.http."+s+".circuitBreaker.minRequests"] = "100"
		labels["levee.http."+s+".circuitBreaker.cooldown"] = "1m"
	}
	p := startLevee(t)
	id := dockertest.Run(t, cli, dockertest.Spec{Name: "levee-i18-" + run + "-bad", Image: image, Networks: []string{net},
		Env: []string{"ECHO_NAME=bad"}, Labels: labels})
	ip := dockertest.IPs(t, cli, id)[net]
	waitServing(t, ip)
	for s := range cases {
		dockertest.Eventually(t, 30*time.Second, func() error { _, err := routedBy(p, s+".test"); return err })
	}
	for s, c := range cases {
		line := p.waitLog(10*time.Second, func(l map[string]any) bool { return l["code"] == c.code && l["service"] == s })
		if line["level"] != "warn" {
			t.Errorf("%s: %v", s, line)
		}
	}
	control(t, ip, "fail?status=500")
	for s := range cases {
		if code, _, _ := send(t, p, http.MethodGet, s+".test", "/"); code != 500 {
			t.Fatalf("%s: first failure %d", s, code)
		}
		code, hdr, body := send(t, p, http.MethodGet, s+".test", "/")
		if code != 503 || hdr.Get("X-Levee-Diagnostic") != "circuit-open" || hdr.Get("X-Levee-Fallback") != "" || hdr.Get("Retry-After") == "" {
			t.Fatalf("%s while open: %d %v %q, want the breaker's own answer", s, code, hdr, body)
		}
	}
}

// The same fallback through the API's JSON (circuit_breaker.fallback,
// fallback_status), without Docker: an operator forces the breaker open
// and the API entrypoint named as fallback answers; a fallback that names
// no entrypoint gives W080 in the entrypoint's view and the old 503.
func TestAPIFallbackEntrypoint(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "maintenance for %s", r.Header.Get("X-Levee-Fallback"))
	}))
	defer page.Close()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "app") }))
	defer app.Close()
	p := startLevee(t, "--docker=false")
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"i18-maint","backends":[{"address":"127.0.0.1","port":%s}],
		"config":{"hostnames":["maint.i18.test"]}}`, portOf(t, page.URL)))
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"i18-app","backends":[{"address":"127.0.0.1","port":%s}],
		"config":{"hostnames":["app.i18.test"],"circuit_breaker":{"cooldown":"30s","fallback":"i18-maint","fallback_status":503}}}`, portOf(t, app.URL)))
	createEntrypoint(t, p, fmt.Sprintf(`{"name":"i18-lost","backends":[{"address":"127.0.0.1","port":%s}],
		"config":{"hostnames":["lost.i18.test"],"circuit_breaker":{"fallback":"i18-nowhere"}}}`, portOf(t, app.URL)))
	// Like a collision (W018), W080 comes from the router, which knows
	// every route: the entrypoint's view shows it.
	if _, _, view := get(t, p.apiURL()+"/entrypoints/i18-lost", ""); !strings.Contains(view, `"code":"W080"`) {
		t.Errorf("view of an entrypoint with an unknown fallback: %s", view)
	}
	for _, name := range []string{"i18-app", "i18-lost"} {
		resp, err := http.Post(p.apiURL()+"/breakers/"+name+"/open", "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("force open %s: %d", name, resp.StatusCode)
		}
	}
	status, hdr, body := get(t, p.proxyURL()+"/", "app.i18.test")
	if status != 503 || body != "maintenance for i18-app" || hdr.Get("Retry-After") != "30" || hdr.Get("X-Levee-Fallback") != "i18-app" {
		t.Fatalf("forced open with a fallback: %d %v %q", status, hdr, body)
	}
	status, hdr, _ = get(t, p.proxyURL()+"/", "lost.i18.test")
	if status != 503 || hdr.Get("X-Levee-Diagnostic") != "circuit-open" {
		t.Fatalf("unknown fallback: %d %v, want the breaker's own 503", status, hdr)
	}
	_, _, view := get(t, p.apiURL()+"/entrypoints/i18-app", "")
	if !strings.Contains(view, `"fallback":"i18-maint","fallback_status":503`) {
		t.Fatalf("entrypoint view lacks the fallback: %s", view)
	}
}
