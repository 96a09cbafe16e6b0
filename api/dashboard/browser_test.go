package dashboard_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/levee-proxy/levee/e2e/browsertest"
	"github.com/levee-proxy/levee/e2e/leveetest"
)

// -update writes the screenshots docs/dashboard.md shows
// (go test ./api/dashboard -run TestDashboard -update); CI never does.
var update = flag.Bool("update", false, "write docs/dashboard/*.png")

var leveeBinary string

func TestMain(m *testing.M) {
	flag.Parse()
	bin, remove, err := leveetest.Build(false)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dashboard:", err)
		os.Exit(1)
	}
	leveeBinary = bin
	code := m.Run()
	remove()
	os.Exit(code)
}

const (
	adminToken = "i17-admin-token-0123456789abcdef"
	readToken  = "i17-read-token-0123456789abcdef0"
)

// Generous bounds: the machine running the suite may be busy. Waits end as
// soon as the page shows what they wait for.
const (
	pageTimeout = 30 * time.Second
	// liveBound is the promise: an opened breaker shows within a
	// second, without a reload.
	liveBound = time.Second
)

// fixture is a levee with tokens, one route with a breaker whose backend
// fails on demand, and one route with a bad breaker threshold (W024).
type fixture struct {
	proc    *leveetest.Proc
	failing atomic.Bool
	base    string // http://api/dashboard/
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.failing.Load() {
			http.Error(w, "failing on purpose", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(backend.Close)
	host, port, _ := strings.Cut(strings.TrimPrefix(backend.URL, "http://"), ":")
	f.proc = leveetest.Start(t, leveeBinary, leveetest.Options{Args: []string{
		"--docker=false", "--api-token", adminToken, "--api-read-token", readToken,
		"--state-file", filepath.Join(t.TempDir(), "state.json"),
	}})
	f.base = "http://" + f.proc.APIAddr + "/dashboard/"
	f.api(t, "POST", "/entrypoints", adminToken, fmt.Sprintf(`{"name":"shop","backends":[{"address":%q,"port":%s}],
		"config":{"hostnames":["shop.test"],"path":"/","circuit_breaker":{"threshold":0.5,"min_requests":4,"cooldown_secs":60}}}`, host, port), http.StatusCreated)
	f.api(t, "POST", "/entrypoints", adminToken, `{"name":"typo","backends":[{"address":"127.0.0.1","port":9}],
		"config":{"hostnames":["typo.test"],"circuit_breaker":{"threshold":7}}}`, http.StatusCreated)
	return f
}

// api sends one API request and checks its status; it returns the body.
func (f *fixture) api(t *testing.T, method, path, token, body string, want int) []byte {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+f.proc.APIAddr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	return b
}

func (f *fixture) breakerState(t *testing.T) string {
	t.Helper()
	var st struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(f.api(t, "GET", "/breakers/shop", readToken, "", http.StatusOK), &st); err != nil {
		t.Fatal(err)
	}
	return st.State
}

func signIn(t *testing.T, b *browsertest.Browser, f *fixture, page, token string) context.Context {
	t.Helper()
	return b.SignIn(t, f.base+"#"+page, token, pageTimeout)
}

func waitJS(t *testing.T, tab context.Context, timeout time.Duration, expr string) time.Duration {
	t.Helper()
	return browsertest.MustWait(t, tab, timeout, expr)
}

func evalString(t *testing.T, tab context.Context, expr string) string {
	t.Helper()
	return browsertest.Eval(t, tab, pageTimeout, expr)
}

// click clicks the element with id once it is there, in one step in the
// page.
func click(t *testing.T, tab context.Context, id string) {
	t.Helper()
	waitJS(t, tab, pageTimeout, fmt.Sprintf(`(() => { const b = document.getElementById(%q); if (!b) return false; b.click(); return true })()`, id))
}

func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	if !*update {
		return
	}
	if err := browsertest.Screenshot(tab, filepath.Join("..", "..", "docs", "dashboard", name+".png")); err != nil {
		t.Fatal(err)
	}
}

func TestDashboard(t *testing.T) {
	b := browsertest.Start(t)
	f := newFixture(t)

	t.Run("event stream parser", func(t *testing.T) {
		tab := b.Tab(t)
		browsertest.Run(t, tab, pageTimeout, "load", chromedp.Navigate(f.base), chromedp.WaitVisible(chromedp.ID("token")))
		// The stream cut at every possible place, with CRLF, CR and LF
		// line ends, comments, a multi-line data field, an event without
		// a type and one without data (dropped): the same events.
		got := evalString(t, tab, `import("./sse.js").then(({Parser}) => {
			const stream = ": subscribed\r\n\r\nevent: breaker\r\ndata: {\"a\":1}\r\n\r\n" +
				": heartbeat\n\nevent: route\ndata: {\"b\":\ndata: 2}\n\ndata:{\"c\":3}\r\revent: lonely\n\n";
			const want = JSON.stringify([["breaker", "{\"a\":1}"], ["route", "{\"b\":\n2}"], ["message", "{\"c\":3}"]]);
			for (let cut = 0; cut <= stream.length; cut++) {
				const p = new Parser();
				const got = JSON.stringify([...p.push(stream.slice(0, cut)), ...p.push(stream.slice(cut))]);
				if (got !== want) return "cut at " + cut + ": " + got;
			}
			return "ok";
		})`)
		if got != "ok" {
			t.Errorf("parser: %s", got)
		}
	})

	t.Run("open API needs no token", func(t *testing.T) {
		open := leveetest.Start(t, leveeBinary, leveetest.Options{Args: []string{
			"--docker=false", "--state-file", filepath.Join(t.TempDir(), "state.json")}})
		tab := b.Tab(t)
		browsertest.Run(t, tab, pageTimeout, "open dashboard", chromedp.Navigate("http://"+open.APIAddr+"/dashboard/#overview"))
		waitJS(t, tab, pageTimeout, `document.getElementById("live").dataset.live === "on" && !document.getElementById("page-overview").hidden`)
		if role := evalString(t, tab, `document.getElementById("role").dataset.role`); role != "open" {
			t.Errorf("role %q, want open", role)
		}
		if evalString(t, tab, `String(document.getElementById("login").hidden)`) != "true" {
			t.Error("the token prompt is shown although the API needs no token")
		}
	})

	t.Run("wrong token shows the error", func(t *testing.T) {
		tab := b.Tab(t)
		browsertest.Run(t, tab, pageTimeout, "sign in with a wrong token",
			chromedp.Navigate(f.base),
			chromedp.WaitVisible(chromedp.ID("token")),
			chromedp.SendKeys(chromedp.ID("token"), "not-the-token-at-all-0000"),
			chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)),
			chromedp.WaitVisible(chromedp.ID("login-error")),
		)
		msg := evalString(t, tab, `document.getElementById("login-error").textContent`)
		if !strings.Contains(msg, "refused") || !strings.Contains(msg, "401") {
			t.Errorf("login error %q, want the API's refusal (401)", msg)
		}
		if evalString(t, tab, `String(document.getElementById("page-overview").hidden)`) != "true" {
			t.Error("the overview is shown without a valid token")
		}
		if got := evalString(t, tab, `sessionStorage.getItem("levee.token") || ""`); got != "" {
			t.Errorf("a refused token stays in sessionStorage: %q", got)
		}
		screenshot(t, tab, "login-error")
	})

	t.Run("read token sees routes and diagnostics, cannot act", func(t *testing.T) {
		tab := signIn(t, b, f, "overview", readToken)
		waitJS(t, tab, pageTimeout, `document.querySelector("#ov-routes .big")?.textContent === "2"`)
		screenshot(t, tab, "overview")

		browsertest.Run(t, tab, pageTimeout, "routes page", chromedp.Navigate(f.base+"#routes"),
			chromedp.WaitVisible(chromedp.CSS(`article[data-route="shop"]`)), chromedp.WaitVisible(chromedp.CSS(`article[data-route="typo"]`)))
		shop := evalString(t, tab, `document.querySelector('article[data-route="shop"]').innerText`)
		for _, want := range []string{"shop.test", "API", "closed", "threshold", "half-open", "last transition"} {
			if !strings.Contains(shop, want) {
				t.Errorf("shop's card lacks %q:\n%s", want, shop)
			}
		}
		if n := evalString(t, tab, `String(document.querySelectorAll(".actions button").length)`); n != "0" {
			t.Errorf("%s action buttons shown to the read token", n)
		}
		// The API refuses the read token anyway, whatever the page shows.
		status := evalString(t, tab, `fetch("/breakers/shop/open", {method: "POST",
			headers: {Authorization: "Bearer " + sessionStorage.getItem("levee.token")}}).then(r => String(r.status))`)
		if status != "403" {
			t.Errorf("POST /breakers/shop/open with the read token: %s, want 403", status)
		}

		browsertest.Run(t, tab, pageTimeout, "diagnostics page", chromedp.Navigate(f.base+"#diagnostics"),
			chromedp.WaitVisible(chromedp.CSS(`li.diag[data-code="W024"]`)))
		d := evalString(t, tab, `document.querySelector('li.diag[data-code="W024"]').closest("section").innerText`)
		for _, want := range []string{"API entrypoint typo", "config.circuit_breaker.threshold", "7", "0.5", "Explain W024"} {
			if !strings.Contains(d, want) {
				t.Errorf("W024 lacks %q:\n%s", want, d)
			}
		}
		href := evalString(t, tab, `document.querySelector('li.diag[data-code="W024"] a').href`)
		if !strings.HasSuffix(href, "docs/diagnostics.md#w024") {
			t.Errorf("W024 links to %s, want docs/diagnostics.md#w024", href)
		}
		if *update {
			evalString(t, tab, `(document.querySelector('li.diag[data-code="W024"] details').open = true, "ok")`)
		}
		screenshot(t, tab, "diagnostics")
	})

	t.Run("a tripped breaker turns open live", func(t *testing.T) {
		tab := signIn(t, b, f, "routes", readToken)
		waitJS(t, tab, pageTimeout, `document.querySelector('article[data-route="shop"]')?.dataset.breakerState === "closed"`)
		f.failing.Store(true)
		defer f.failing.Store(false)
		client := &http.Client{Timeout: 10 * time.Second}
		for i := 0; i < 50 && f.breakerState(t) != "open"; i++ {
			req, _ := http.NewRequest("GET", "http://"+f.proc.ProxyAddr+"/", nil)
			req.Host = "shop.test"
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if st := f.breakerState(t); st != "open" {
			t.Fatalf("breaker %s after 50 failing requests, want open", st)
		}
		took := waitJS(t, tab, pageTimeout, `document.querySelector('article[data-route="shop"]')?.dataset.breakerState === "open"`)
		t.Logf("the page showed the open breaker %s after the API reported it", took)
		if took > liveBound {
			t.Errorf("the page showed the open breaker %s after the API did, want within %s", took, liveBound)
		}
		card := evalString(t, tab, `document.querySelector('article[data-route="shop"]').innerText`)
		if !strings.Contains(card, "open") || !strings.Contains(card, "error_ratio") {
			t.Errorf("open card does not say open by rule error_ratio:\n%s", card)
		}
		if evalString(t, tab, `String(performance.getEntriesByType("navigation").length)`) != "1" {
			t.Error("the page reloaded")
		}
		// The reload the event scheduled brings the figures, and the next
		// history sample (every 5 s) reaches the sparkline over the stream.
		waitJS(t, tab, pageTimeout, `document.querySelector('article[data-route="shop"]').innerText.includes("1 trips")`)
		waitJS(t, tab, pageTimeout, `/[1-9][0-9]* failures/.test(document.querySelector('article[data-route="shop"] section.breaker .spark figcaption').textContent)`)
		screenshot(t, tab, "routes")
		if *update {
			browsertest.Run(t, tab, pageTimeout, "phone-sized viewport", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(2)))
			screenshot(t, tab, "routes-phone")
			browsertest.Run(t, tab, pageTimeout, "desktop viewport", chromedp.EmulateViewport(1280, 900))
		}
	})

	t.Run("admin actions with confirmation", func(t *testing.T) {
		f.api(t, "POST", "/breakers/shop/reset", adminToken, "", http.StatusOK)
		tab := signIn(t, b, f, "routes", adminToken)
		waitJS(t, tab, pageTimeout, `document.querySelector('article[data-route="shop"]')?.dataset.breakerState === "closed"`)
		// Cancel first: nothing happens.
		// The cards are rendered again on every event (a history sample
		// every 5 s): the buttons are clicked in one step in the page, so a
		// re-render cannot swap them between finding and clicking.
		click(t, tab, "act-open-shop")
		browsertest.Run(t, tab, pageTimeout, "open, then cancel", chromedp.WaitVisible(chromedp.ID("confirm")),
			chromedp.Click(chromedp.CSS(`#confirm button[value=cancel]`)), chromedp.WaitNotVisible(chromedp.ID("confirm")))
		if st := f.breakerState(t); st != "closed" {
			t.Fatalf("breaker %s after a cancelled open, want closed", st)
		}
		click(t, tab, "act-open-shop")
		browsertest.Run(t, tab, pageTimeout, "open, confirmed", chromedp.WaitVisible(chromedp.ID("confirm")))
		screenshot(t, tab, "confirm")
		browsertest.Run(t, tab, pageTimeout, "confirm", chromedp.Click(chromedp.ID("confirm-ok")))
		waitJS(t, tab, pageTimeout, `document.querySelector('article[data-route="shop"]')?.dataset.breakerState === "open"`)
		if st := f.breakerState(t); st != "open" {
			t.Errorf("API says %s after the page opened the breaker", st)
		}
		waitJS(t, tab, pageTimeout, `document.querySelector('article[data-route="shop"] .transition')?.textContent.includes("by rule manual (admin@")`)
		browsertest.Run(t, tab, pageTimeout, "activity page", chromedp.Navigate(f.base+"#activity"))
		waitJS(t, tab, pageTimeout, `[...document.querySelectorAll("#activity li")].some(li => li.textContent.includes("by admin@"))`)
		screenshot(t, tab, "activity")
		browsertest.Run(t, tab, pageTimeout, "routes page", chromedp.Navigate(f.base+"#routes"), chromedp.WaitVisible(chromedp.ID("act-reset-shop")))
		click(t, tab, "act-reset-shop")
		browsertest.Run(t, tab, pageTimeout, "reset", chromedp.WaitVisible(chromedp.ID("confirm")), chromedp.Click(chromedp.ID("confirm-ok")))
		waitJS(t, tab, pageTimeout, `document.querySelector('article[data-route="shop"]')?.dataset.breakerState === "closed"`)

		// From the keyboard: Enter on a focused action opens the
		// confirmation with Cancel focused; Escape leaves it, changing
		// nothing.
		waitJS(t, tab, pageTimeout, `(() => { const b = document.getElementById("act-open-shop"); b?.focus(); return document.activeElement === b })()`)
		browsertest.Run(t, tab, pageTimeout, "Enter on Open", chromedp.KeyEvent("\r"), chromedp.WaitVisible(chromedp.ID("confirm")))
		if got := evalString(t, tab, `document.activeElement.value || ""`); got != "cancel" {
			t.Errorf("focus in the confirmation on %q, want the Cancel button", got)
		}
		browsertest.Run(t, tab, pageTimeout, "Escape", chromedp.KeyEvent("\u001b"), chromedp.WaitNotVisible(chromedp.ID("confirm")))
		if st := f.breakerState(t); st != "closed" {
			t.Errorf("breaker %s after Escape, want closed", st)
		}
		// Every control has an accessible name, every state badge words.
		if bad := evalString(t, tab, `[...document.querySelectorAll("button, input, a")].filter(e =>
			!(e.labels?.length || e.textContent.trim() || e.getAttribute("aria-label"))).map(e => e.outerHTML).join("\n")`); bad != "" {
			t.Errorf("controls without a name:\n%s", bad)
		}
		if bad := evalString(t, tab, `[...document.querySelectorAll(".badge[data-state]")].filter(e =>
			!e.textContent.includes(e.dataset.state)).map(e => e.outerHTML).join("\n")`); bad != "" {
			t.Errorf("state shown by colour only:\n%s", bad)
		}
	})
}
