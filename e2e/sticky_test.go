package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// stickyGet asks Levee for host with the cookie (if any) and returns the
// echo replica that answered and the sticky cookie it was given ("" when
// none).
func stickyGet(p *leveeProc, host, cookie string) (name, setCookie string, err error) {
	req, _ := http.NewRequest(http.MethodGet, p.proxyURL()+"/", nil)
	req.Host = host
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("status %d, diagnostic %q", resp.StatusCode, resp.Header.Get("X-Levee-Diagnostic"))
	}
	var reply struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		return "", "", err
	}
	for _, c := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(c, "srv=") {
			setCookie = strings.SplitN(c, ";", 2)[0]
		}
	}
	return reply.Name, setCookie, nil
}

// Sticky sessions through the binary, with the labels a Traefik user
// writes (loadbalancer.sticky.cookie.* → sticky.cookie.*): a client with
// the cookie stays on its replica; when that replica stops, the client
// moves to the other and gets a cookie for it.
func TestDockerI14StickySessions(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli)
	network := dockertest.Network(t, cli)
	host := "sticky-" + dockertest.RunID(t) + ".test"
	labels := map[string]string{"levee.http.app.sticky.cookie.name": "srv", "levee.http.app.sticky.cookie.httpOnly": "true"}

	p := startLevee(t, "--route-grace", "1m")
	ids := map[string]string{
		"blue":  dockertest.Run(t, cli, echoSpec(image, network, "blue", host, labels)),
		"green": dockertest.Run(t, cli, echoSpec(image, network, "green", host, labels)),
	}
	// Both replicas are routed once a cookie-less client has seen both.
	seen := map[string]bool{}
	dockertest.Eventually(t, 20*time.Second, func() error {
		name, _, err := stickyGet(p, host, "")
		if err != nil {
			return err
		}
		seen[name] = true
		if len(seen) < 2 {
			return fmt.Errorf("replicas seen so far: %v", seen)
		}
		return nil
	})

	first, cookie, err := stickyGet(p, host, "")
	if err != nil || cookie == "" {
		t.Fatalf("first request: %q %q %v", first, cookie, err)
	}
	for range 10 {
		name, again, err := stickyGet(p, host, cookie)
		if err != nil || name != first || again != "" {
			t.Fatalf("with the cookie: %q (want %q), new cookie %q, %v", name, first, again, err)
		}
	}

	dockertest.Stop(t, cli, ids[first])
	var moved, newCookie string
	dockertest.Eventually(t, 10*time.Second, func() error {
		name, c, err := stickyGet(p, host, cookie)
		if err != nil || name == first || c == "" || c == cookie {
			return fmt.Errorf("after the stop: %q, cookie %q, %v", name, c, err)
		}
		moved, newCookie = name, c
		return nil
	})
	for range 5 {
		if name, _, err := stickyGet(p, host, newCookie); err != nil || name != moved {
			t.Fatalf("with the new cookie: %q (want %q), %v", name, moved, err)
		}
	}
}
