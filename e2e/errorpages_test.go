package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// echoPage is what cmd/echo answers, as far as the error-pages test
// reads it: who answered, and which path it was asked.
type echoPage struct {
	Name    string `json:"name"`
	Request struct {
		Path string `json:"path"`
	} `json:"request"`
}

// Error pages through the binary with Docker labels: a labelled service
// whose backend answers 503 gets the pages service's answer to
// /503.html, with the 503 kept (HEAD too); an unlisted status and a good
// answer pass; when the pages service fails, the client gets the
// original answer.
func TestDockerErrorPages(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	net := i18Network(t, cli)
	run := dockertest.RunID(t)
	svc := "ep" + strings.ReplaceAll(run, "-", "")
	app, pages := svc+"app", svc+"pages"
	appHost, pagesHost := app+".test", pages+".test"

	p := startLevee(t)
	appC := dockertest.Run(t, cli, dockertest.Spec{Name: "levee-ep-" + run + "-app", Image: image, Networks: []string{net},
		Env: []string{"ECHO_NAME=app"}, Labels: map[string]string{
			"levee.enable":                         "true",
			"levee.http." + app + ".host":          appHost,
			"levee.http." + app + ".errors.status": "500-599,404",
			"levee.http." + app + ".errors.route":  pages,
			"levee.http." + app + ".errors.query":  "/{status}.html",
		}})
	pagesC := dockertest.Run(t, cli, dockertest.Spec{Name: "levee-ep-" + run + "-pages", Image: image, Networks: []string{net},
		Env: []string{"ECHO_NAME=pages"}, Labels: map[string]string{"levee.enable": "true", "levee.http." + pages + ".host": pagesHost}})
	appIP, pagesIP := dockertest.IPs(t, cli, appC)[net], dockertest.IPs(t, cli, pagesC)[net]
	if appIP == "" || pagesIP == "" {
		t.Fatalf("no IPs on %s", net)
	}
	waitServing(t, appIP)
	waitServing(t, pagesIP)
	for _, h := range []string{appHost, pagesHost} {
		dockertest.Eventually(t, 30*time.Second, func() error { _, err := routedBy(p, h); return err })
	}
	answer := func(method, path string) (int, http.Header, echoPage, string) {
		code, hdr, body := send(t, p, method, appHost, path)
		var a echoPage
		_ = json.Unmarshal([]byte(body), &a)
		return code, hdr, a, body
	}
	if code, _, a, body := answer(http.MethodGet, "/"); code != 200 || a.Name != "app" {
		t.Fatalf("healthy: %d %q", code, body)
	}

	control(t, appIP, "fail?status=503")
	code, hdr, a, body := answer(http.MethodGet, "/checkout")
	if code != 503 || a.Name != "pages" || a.Request.Path != "/503.html" || hdr.Get("X-Echo-Hostname") != "" {
		t.Fatalf("listed 503: %d %v %q, want the pages service's /503.html with 503", code, hdr, body)
	}
	if code, hdr, _, body := answer(http.MethodHead, "/checkout"); code != 503 || body != "" || hdr.Get("Content-Length") == "" {
		t.Fatalf("HEAD: %d %v %q", code, hdr, body)
	}

	control(t, appIP, "fail?status=409")
	if code, _, a, body := answer(http.MethodGet, "/"); code != 409 || a.Name != "app" {
		t.Fatalf("unlisted 409: %d %q, want the app's own answer", code, body)
	}

	// The pages service fails: the original answer goes out.
	control(t, appIP, "fail?status=502")
	control(t, pagesIP, "fail?status=500")
	if code, _, a, body := answer(http.MethodGet, "/"); code != 502 || a.Name != "app" {
		t.Fatalf("pages failing: %d %q, want the app's own 502", code, body)
	}
}
