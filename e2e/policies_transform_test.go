package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// The transform policies through the binary, with the labels a Traefik
// user writes for a labelled container (Traefik's names where Levee has
// them: headers.customRequestHeaders.<Name>, headers.accessControl*,
// compress, redirectRegex.*, replacePathRegex.*).
func TestDockerI14TransformPolicies(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	host := "tp-" + dockertest.RunID(t) + ".test"
	labels := map[string]string{
		"levee.http.app.headers.customRequestHeaders.X-Script-Name": "app",
		"levee.http.app.headers.customResponseHeaders.X-Powered-By": "levee",
		"levee.http.app.headers.frameDeny":                          "true",
		"levee.http.app.headers.accessControlAllowOriginList":       "https://app.example.com",
		"levee.http.app.headers.accessControlAllowMethods":          "GET,PUT",
		"levee.http.app.compress":                                   "true",
		"levee.http.app.compress.minResponseBodyBytes":              "100",
		"levee.http.app.replacePathRegex.regex":                     "^/api/(.*)",
		"levee.http.app.replacePathRegex.replacement":               "/v2/$1",
		"levee.http.app.redirectRegex.regex":                        `^http://([^/]+)/old$`,
		"levee.http.app.redirectRegex.replacement":                  "http://$1/new",
	}
	p := startLevee(t)
	dockertest.Run(t, cli, echoSpec(image, network, "tp", host, labels))
	dockertest.Eventually(t, 20*time.Second, func() error {
		_, err := routedBy(p, host)
		return err
	})

	req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/api/users?x=1", nil)
	req.Host = host
	req.Header.Set("Accept-Encoding", "gzip")
	req.Header.Set("Origin", "https://app.example.com")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 200 || h.Get("Content-Encoding") != "gzip" || h.Get("X-Frame-Options") != "DENY" ||
		h.Get("X-Powered-By") != "levee" || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(strings.Join(h.Values("Vary"), ","), "Accept-Encoding") || !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Fatalf("response %d %v", resp.StatusCode, h)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Request struct {
			Path    string              `json:"path"`
			Query   string              `json:"query"`
			Headers map[string][]string `json:"headers"`
		} `json:"request"`
	}
	if err := json.NewDecoder(zr).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	seen := reply.Request
	if seen.Path != "/v2/users" || seen.Query != "x=1" || strings.Join(seen.Headers["X-Script-Name"], ",") != "app" ||
		strings.Join(seen.Headers["X-Replaced-Path"], ",") != "/api/users" {
		t.Fatalf("the backend saw %+v", seen)
	}

	// A preflight is answered by Levee.
	req, _ = http.NewRequest(http.MethodOptions, p.proxyURL()+"/api/users", nil)
	req.Host = host
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Access-Control-Request-Method", "PUT")
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Methods") != "GET, PUT" {
		t.Fatalf("preflight %d %v", resp.StatusCode, resp.Header)
	}

	// The redirect answers before the backend.
	req, _ = http.NewRequest(http.MethodGet, p.proxyURL()+"/old", nil)
	req.Host = host
	resp, err = http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://"+host+"/new" {
		t.Fatalf("redirect %d %v", resp.StatusCode, resp.Header)
	}
}
