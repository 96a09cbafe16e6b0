package dashboard_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/levee-proxy/levee/e2e/browsertest"
	"github.com/levee-proxy/levee/e2e/leveetest"
)

// A TCP or UDP route's card says which protocol it carries and names the
// listener it serves on, where an HTTP route's names TLS and its
// listeners; a UDP route's rules show its session settings.
func TestDashboardLayer4RouteBadges(t *testing.T) {
	b := browsertest.Start(t)
	proc := leveetest.Start(t, leveeBinary, leveetest.Options{Args: []string{
		"--docker=false", "--api-token", adminToken, "--api-read-token", readToken,
		"--listen", "dns=127.0.0.1:0,udp", "--listen", "postgres=127.0.0.1:0,tcp",
		"--state-file", filepath.Join(t.TempDir(), "state.json"),
	}})
	f := &fixture{proc: proc, base: "http://" + proc.APIAddr + "/dashboard/"}
	f.api(t, "POST", "/entrypoints", adminToken, `{"name":"dns","protocol":"Udp","backends":[{"address":"127.0.0.1","port":9}],
		"config":{"udp":{"listener":"dns","max_sessions":500,"answer_timeout":"2s"}}}`, http.StatusCreated)
	f.api(t, "POST", "/entrypoints", adminToken, `{"name":"db","protocol":"Tcp","backends":[{"address":"127.0.0.1","port":9}],
		"config":{"tcp":{"listener":"postgres"}}}`, http.StatusCreated)
	f.api(t, "POST", "/entrypoints", adminToken, `{"name":"web","backends":[{"address":"127.0.0.1","port":9}],
		"config":{"hostnames":["web.test"]}}`, http.StatusCreated)

	tab := signIn(t, b, f, "routes", readToken)
	waitJS(t, tab, pageTimeout, `document.querySelectorAll('article.route').length === 3`)
	card := func(route, sel string) string {
		t.Helper()
		return evalString(t, tab, `(document.querySelector('article.route[data-route="`+route+`"] `+sel+`') || {textContent: "(none)"}).textContent`)
	}
	for _, c := range []struct{ route, protocol, listener string }{{"dns", "UDP", "listener: dns"}, {"db", "TCP", "listener: postgres"}} {
		if got := card(c.route, `.badge.protocol`); got != c.protocol {
			t.Errorf("%s: protocol badge %q, want %q", c.route, got, c.protocol)
		}
		if got := card(c.route, `.badge.listeners`); got != c.listener {
			t.Errorf("%s: listener badge %q, want %q", c.route, got, c.listener)
		}
		if got := card(c.route, `.badge.tls`); got != "(none)" {
			t.Errorf("%s: TLS badge %q on a %s route, want none", c.route, got, c.protocol)
		}
	}
	if got := card("dns", `.facts.udp`); got != "udp listenerdnssessionsat most 500, idle after 30sanswer timeout2s" {
		t.Errorf("UDP rules %q, want its listener, session bound, idle timeout and answer timeout", got)
	}
	if got := card("web", `.badge.protocol`); got != "(none)" {
		t.Errorf("HTTP route: protocol badge %q, want none", got)
	}
	if got := card("web", `.badge.tls`); got != "plain HTTP" {
		t.Errorf("HTTP route: TLS badge %q, want plain HTTP", got)
	}
	if got := card("dns", `details.policies summary`); got != "Policies (0)" {
		t.Errorf("UDP route: %q, want its udp settings not listed as policies", got)
	}
}
