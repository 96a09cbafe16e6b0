package dashboard_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/levee-proxy/levee/e2e/browsertest"
)

// send proxies n requests to shop.test and returns how many were answered
// with a 5xx.
func (f *fixture) send(t *testing.T, n int) (errors int) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	for range n {
		req, _ := http.NewRequest("GET", "http://"+f.proc.ProxyAddr+"/", nil)
		req.Host = "shop.test"
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			errors++
		}
	}
	return errors
}

// The traffic numbers on the page against a known load: 12 answered
// requests, then 4 failing ones that trip shop's breaker (min_requests 4,
// threshold 0.5) — 16 requests, 4 errors, 25 %. The page is opened after
// the trip: the overview ranks shop first by traffic and by errors, its
// card shows the figures and its TLS and listener badges, the Activity
// page shows the trip that happened before the page was opened, and more
// traffic reaches the open page without a reload.
func TestDashboardTraffic(t *testing.T) {
	b := browsertest.Start(t)
	f := newFixture(t)
	if e := f.send(t, 12); e != 0 {
		t.Fatalf("%d errors from the healthy backend", e)
	}
	f.failing.Store(true)
	if e := f.send(t, 4); e != 4 {
		t.Fatalf("%d errors from 4 failing requests, want 4", e)
	}
	f.failing.Store(false)
	if st := f.breakerState(t); st != "open" {
		t.Fatalf("breaker %s after 4 failures, want open", st)
	}

	tab := signIn(t, b, f, "overview", readToken)
	waitJS(t, tab, pageTimeout, `document.querySelector('#ov-top-traffic li[data-route="shop"]') !== null`)
	if top := evalString(t, tab, `document.querySelector('#ov-top-traffic li').textContent`); !strings.Contains(top, "shop") || !strings.Contains(top, "16 requests") {
		t.Errorf("top route by traffic %q, want shop with 16 requests", top)
	}
	if top := evalString(t, tab, `document.querySelector('#ov-top-errors li').textContent`); !strings.Contains(top, "shop") || !strings.Contains(top, "4 errors (25 %)") {
		t.Errorf("top route by errors %q, want shop with 4 errors (25 %%)", top)
	}
	// Readable: the list is not drawn in its card's background colour.
	if same := evalString(t, tab, `(() => { const li = document.querySelector('#ov-top-traffic li');
		return String(getComputedStyle(li).color === getComputedStyle(li.closest(".card")).backgroundColor) })()`); same != "false" {
		t.Error("the top routes are drawn in their card's background colour")
	}
	screenshot(t, tab, "overview-traffic")

	browsertest.Run(t, tab, pageTimeout, "activity page", chromedp.Navigate(f.base+"#activity"))
	waitJS(t, tab, pageTimeout, `[...document.querySelectorAll('#activity li[data-type="breaker"]')].some(li => li.textContent.includes("breaker shop: closed → open (rule error_ratio)"))`)

	browsertest.Run(t, tab, pageTimeout, "routes page", chromedp.Navigate(f.base+"#routes"))
	block := `document.querySelector('article[data-route="shop"] section.traffic')`
	waitJS(t, tab, pageTimeout, block+`?.dataset.requests === "16"`)
	text := evalString(t, tab, block+`.innerText`)
	for _, want := range []string{"25 % (4 of 16 requests)", "req/s", "p50 ", "p99 ", "last 5 min: 16 requests, 4 errors"} {
		if !strings.Contains(text, want) {
			t.Errorf("shop's traffic lacks %q:\n%s", want, text)
		}
	}
	p50 := evalString(t, tab, block+`.querySelector(".latency").textContent`)
	if !strings.Contains(p50, "ms") {
		t.Errorf("latency %q, want milliseconds", p50)
	}
	// The backend counts only what it answered: the failures before the
	// breaker opened, not the breaker's own 503s.
	var api struct {
		Backends []struct {
			Requests, Errors int
		} `json:"backends"`
	}
	if err := json.Unmarshal(f.api(t, "GET", "/traffic/shop", readToken, "", http.StatusOK), &api); err != nil {
		t.Fatal(err)
	}
	if len(api.Backends) != 1 || api.Backends[0].Errors < 1 || api.Backends[0].Errors > 4 {
		t.Fatalf("GET /traffic/shop backends %+v, want one with 1 to 4 errors", api.Backends)
	}
	backends := evalString(t, tab, `document.querySelector('article[data-route="shop"] .backends').innerText`)
	if want := fmt.Sprintf(" (%d)", api.Backends[0].Errors); !strings.Contains(backends, want) {
		t.Errorf("shop's backend row lacks its errors %q:\n%s", want, backends)
	}
	badges := evalString(t, tab, `[...document.querySelectorAll('article[data-route="shop"] h3 .badge')].map(b => b.textContent).join("|")`)
	if !strings.Contains(badges, "plain HTTP") || !strings.Contains(badges, "every plain listener") {
		t.Errorf("shop's badges %q, want plain HTTP and every plain listener", badges)
	}
	screenshot(t, tab, "traffic")

	// More traffic reaches the open page (the figures are read again
	// every 5 s), without a reload.
	evalString(t, tab, `(window.levee_marker = "same page", "ok")`)
	f.api(t, "POST", "/breakers/shop/reset", adminToken, "", http.StatusOK)
	if e := f.send(t, 4); e != 0 {
		t.Fatalf("%d errors after the reset", e)
	}
	waitJS(t, tab, pageTimeout, block+`?.dataset.requests === "20"`)
	if text := evalString(t, tab, block+`.innerText`); !strings.Contains(text, "20 % (4 of 20 requests)") {
		t.Errorf("after 4 more requests shop's traffic says:\n%s", text)
	}
	if evalString(t, tab, `String(window.levee_marker)`) != "same page" {
		t.Error("the page reloaded")
	}
	if msg := evalString(t, tab, `document.getElementById("error").hidden ? "" : document.getElementById("error").textContent`); msg != "" {
		t.Errorf("the page shows an error: %s", msg)
	}
}
