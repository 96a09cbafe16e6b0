package dashboard_test

import (
	"net/http"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/levee-proxy/levee/e2e/browsertest"
)

// holdFirstStream is run in the page before its own scripts: it holds the
// page's first GET /events until the test calls window.leveeRelease(),
// opening the gap between loading the recent events and the stream.
const holdFirstStream = `(() => {
  const real = window.fetch.bind(window);
  let release;
  const held = new Promise((r) => { release = r; });
  window.leveeRelease = () => { release(); return "ok"; };
  window.leveeStreams = 0;
  window.fetch = (input, init) => {
    if (String(input).endsWith("/events") && ++window.leveeStreams === 1) return held.then(() => real(input, init));
    return real(input, init);
  };
})();`

// The Activity list misses nothing between loading the recent events and
// the stream opening: a breaker opened while the page's first stream is
// held back appears once the stream opens, and only once.
func TestDashboardActivityMissesNothingBeforeTheStream(t *testing.T) {
	b := browsertest.Start(t)
	f := newFixture(t)
	tab := b.Tab(t)
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: holdFirstStream}); err != nil {
		t.Fatalf("installing the stream hold: %v", err)
	}
	browsertest.Run(t, tab, pageTimeout, "sign in",
		chromedp.Navigate(f.base+"#activity"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), readToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)),
	)
	// The recent events are loaded before the stream is asked for.
	waitJS(t, tab, pageTimeout, `window.leveeStreams === 1`)

	f.api(t, "POST", "/breakers/shop/open", adminToken, "", http.StatusOK)
	opened := `[...document.querySelectorAll('#activity li[data-type="breaker"]')].filter(li => li.textContent.includes("breaker shop: closed → open"))`
	if n := evalString(t, tab, `String(`+opened+`.length)`); n != "0" {
		t.Fatalf("%s breaker items before the stream opened, want 0", n)
	}
	evalString(t, tab, `window.leveeRelease()`)
	waitJS(t, tab, pageTimeout, `document.getElementById("live").dataset.live === "on"`)
	waitJS(t, tab, pageTimeout, opened+`.length > 0`)
	if n := evalString(t, tab, `String(`+opened+`.length)`); n != "1" {
		t.Fatalf("the opening is listed %s times, want once", n)
	}
}
