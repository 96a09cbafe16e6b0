package dashboard_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/browsertest"
	"github.com/levee-proxy/levee/e2e/leveetest"
)

// policyFile declares two policies from a config file: office-only (which
// the API declares again, differently: W039) and gzip.
const policyFile = `policies:
  - name: office-only
    config:
      ip_allow_list: {source_range: [10.0.0.0/8]}
  - name: gzip
    config:
      compress: {encodings: [gzip]}
`

// staffHash is a bcrypt line of the user admin; the page must never show
// its hash.
const staffHash = "admin:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC"

// policyFixture is a levee with named policies from a file and the API,
// and four routes using them: alpha (staff, gzip) and beta (staff) are
// served, gamma (office-only, declared twice with different allow-lists)
// and delta (stafff, declared nowhere: E007) deny.
func policyFixture(t *testing.T) *fixture {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	t.Cleanup(backend.Close)
	host, port, _ := strings.Cut(strings.TrimPrefix(backend.URL, "http://"), ":")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "policies.yaml"), []byte(policyFile), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &fixture{}
	f.proc = leveetest.Start(t, leveeBinary, leveetest.Options{Args: []string{
		"--docker=false", "--api-token", adminToken, "--api-read-token", readToken,
		"--state-file", filepath.Join(t.TempDir(), "state.json"), "--config-dir", dir,
	}})
	f.base = "http://" + f.proc.APIAddr + "/dashboard/"
	// The file's policies are in force before the API declares its own:
	// the file's office-only is the older declaration.
	deadline := time.Now().Add(pageTimeout)
	for len(f.policies(t)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the config file's policies never appeared: %v", f.policies(t))
		}
		time.Sleep(50 * time.Millisecond) // polling the API, with a deadline
	}
	f.api(t, "PUT", "/policies/staff", adminToken, `{"name":"staff","config":{"basic_auth":{"users":["`+staffHash+`"]},"ip_allow_list":{"source_range":["127.0.0.0/8"]}}}`, http.StatusCreated)
	f.api(t, "PUT", "/policies/office-only", adminToken, `{"name":"office-only","config":{"ip_allow_list":{"source_range":["192.168.0.0/16"]}}}`, http.StatusCreated)
	for name, refs := range map[string]string{"alpha": `"staff","gzip"`, "beta": `"staff"`, "gamma": `"office-only"`, "delta": `"stafff"`} {
		f.api(t, "POST", "/entrypoints", adminToken, fmt.Sprintf(`{"name":%q,"backends":[{"address":%q,"port":%s}],
			"config":{"hostnames":["%s.test"],"policies":[%s]}}`, name, host, port, name, refs), http.StatusCreated)
	}
	return f
}

// apiPolicy is a policy as GET /policies lists it.
type apiPolicy struct {
	Name, Source string
	Routes       []string
	Denies       bool
	Diagnostics  []struct{ Code string }
}

func (f *fixture) policies(t *testing.T) map[string]apiPolicy {
	t.Helper()
	var list struct{ Policies []apiPolicy }
	if err := json.Unmarshal(f.api(t, "GET", "/policies", readToken, "", http.StatusOK), &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]apiPolicy{}
	for _, p := range list.Policies {
		out[p.Name] = p
	}
	return out
}

// proxied is the status and X-Levee-Diagnostic of a GET to host.
func (f *fixture) proxied(t *testing.T, host string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+f.proc.ProxyAddr+"/", nil)
	req.Host = host
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Levee-Diagnostic")
}

// The Policies page on real data: each named policy with its source, its
// groups (the basic-auth hash redacted), the routes that use it (links to
// their cards) and its diagnostics; office-only, declared by the file and
// the API with different allow-lists (W039), and stafff, referenced but
// declared nowhere (E007), are shown as making their routes deny — which
// the proxy confirms. Each route card lists its named policies, linking
// back, with the same verdict.
func TestDashboardPolicies(t *testing.T) {
	b := browsertest.Start(t)
	f := policyFixture(t)

	api := f.policies(t)
	if p := api["office-only"]; !p.Denies || p.Source != "file" || !slices.ContainsFunc(p.Diagnostics, func(d struct{ Code string }) bool { return d.Code == "W039" }) {
		t.Fatalf("GET /policies office-only %+v, want the file's, denying, with W039", p)
	}
	if p := api["staff"]; p.Denies || p.Source != "api" || !slices.Equal(p.Routes, []string{"alpha", "beta"}) {
		t.Fatalf("GET /policies staff %+v, want the API's, used by alpha and beta", p)
	}
	// What the page will say about denying, the proxy does.
	for host, want := range map[string]int{"gamma.test": http.StatusForbidden, "delta.test": http.StatusForbidden, "beta.test": http.StatusUnauthorized} {
		code, diag := f.proxied(t, host)
		if code != want || (want == http.StatusForbidden) != (diag == "policy-misconfigured") {
			t.Errorf("GET %s: %d %q, want %d (policy-misconfigured for a 403)", host, code, diag, want)
		}
	}

	tab := signIn(t, b, f, "policies", readToken)
	waitJS(t, tab, pageTimeout, `document.querySelectorAll('#policies article.policy').length === 3`)
	card := func(name string) string {
		return fmt.Sprintf(`document.querySelector('article.policy[data-policy=%q]')`, name)
	}
	for name, p := range api {
		text := evalString(t, tab, card(name)+`.innerText`)
		if !strings.Contains(text, map[string]string{"api": "API", "file": "file"}[p.Source]) {
			t.Errorf("%s's card lacks its source %s:\n%s", name, p.Source, text)
		}
		links := evalString(t, tab, `[...`+card(name)+`.querySelectorAll('.users a')].map(a => a.dataset.route + "=" + a.getAttribute("href")).join(",")`)
		var want []string
		for _, r := range p.Routes {
			want = append(want, r+"=#route-"+r)
		}
		if links != strings.Join(want, ",") {
			t.Errorf("%s's route links %q, want %q", name, links, strings.Join(want, ","))
		}
		if got := evalString(t, tab, card(name)+`.dataset.denies`); got != map[bool]string{true: "yes", false: "no"}[p.Denies] {
			t.Errorf("%s's card denies=%s, the API says %v", name, got, p.Denies)
		}
	}
	staff := evalString(t, tab, card("staff")+`.innerText`)
	if !strings.Contains(staff, "basic auth") || !strings.Contains(staff, "admin:(redacted)") || strings.Contains(staff, "$2y$") ||
		!strings.Contains(staff, "127.0.0.0/8") {
		t.Errorf("staff's groups, want basic auth with admin:(redacted) and the allow-list, no hash:\n%s", staff)
	}
	if office := evalString(t, tab, card("office-only")+`.innerText`); !strings.Contains(office, "routes using it deny every request") ||
		!strings.Contains(office, "W039") || !strings.Contains(office, "10.0.0.0/8") {
		t.Errorf("office-only's card, want the deny badge, W039 and the file's allow-list:\n%s", office)
	}
	unknown := evalString(t, tab, `document.querySelector('.unknown-policies li[data-policy="stafff"]')?.innerText || ""`)
	if !strings.Contains(unknown, "E007") || !strings.Contains(unknown, "delta") {
		t.Errorf("unknown reference stafff: %q, want E007 and the route delta", unknown)
	}
	if n := evalString(t, tab, `String(document.querySelectorAll('#policies article.policy[data-denies="yes"]').length)`); n != "1" {
		t.Errorf("%s policy cards deny, want 1 (office-only)", n)
	}
	screenshot(t, tab, "policies")

	// A route link opens the route's card, focused.
	waitJS(t, tab, pageTimeout, `(() => { const a = `+card("staff")+`.querySelector('a[data-route="beta"]'); if (!a) return false; a.click(); return true })()`)
	waitJS(t, tab, pageTimeout, `!document.getElementById("page-routes").hidden && document.activeElement?.dataset.route === "beta"`)

	refs := func(route string) string {
		return evalString(t, tab, fmt.Sprintf(`[...document.querySelectorAll('article.route[data-route=%q] .named-policies .ref')].map(r => r.dataset.policy + ":" + r.dataset.state).join(",")`, route))
	}
	for route, want := range map[string]string{"alpha": "staff:ok,gzip:ok", "beta": "staff:ok", "gamma": "office-only:denies", "delta": "stafff:unknown"} {
		if got := refs(route); got != want {
			t.Errorf("%s's named policies %q, want %q", route, got, want)
		}
	}
	if text := evalString(t, tab, `document.querySelector('article.route[data-route="delta"] .named-policies').innerText`); !strings.Contains(text, "E007") || !strings.Contains(text, "the route denies") {
		t.Errorf("delta's named policies: %q, want E007 and that the route denies", text)
	}
	if text := evalString(t, tab, `document.querySelector('article.route[data-route="gamma"] .named-policies').innerText`); !strings.Contains(text, "W039") || !strings.Contains(text, "the route denies") {
		t.Errorf("gamma's named policies: %q, want W039 and that the route denies", text)
	}
	waitJS(t, tab, pageTimeout, `(() => { const r = document.querySelector('article.route[data-route="gamma"]'); r.scrollIntoView(); return true })()`)
	screenshot(t, tab, "route-policies")

	// And back: a policy link on a card opens the policy's card.
	waitJS(t, tab, pageTimeout, `(() => { const a = document.querySelector('article.route[data-route="alpha"] .ref[data-policy="gzip"] a'); if (!a) return false; a.click(); return true })()`)
	waitJS(t, tab, pageTimeout, `!document.getElementById("page-policies").hidden && document.activeElement?.dataset.policy === "gzip"`)

	if ov := evalString(t, tab, `(location.hash = "#overview", document.getElementById("ov-policies").innerText)`); !strings.Contains(ov, "3") || !strings.Contains(ov, "2 make routes deny") {
		t.Errorf("overview's policies card: %q, want 3 policies, 2 making routes deny", ov)
	}
	if msg := evalString(t, tab, `document.getElementById("error").hidden ? "" : document.getElementById("error").textContent`); msg != "" {
		t.Errorf("the page shows an error: %s", msg)
	}
}
