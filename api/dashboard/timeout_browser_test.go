package dashboard_test

import (
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/levee-proxy/levee/e2e/browsertest"
)

// hangHistory is run in the page before its own scripts: its GET
// /history never answers (it ends only when the page aborts it), as from
// an API that accepted the call and went quiet.
const hangHistory = `(() => {
  const real = window.fetch.bind(window);
  window.fetch = (input, init) => {
    if (!String(input).endsWith("/history")) return real(input, init);
    return new Promise((_, reject) => {
      const s = init && init.signal;
      if (s) s.addEventListener("abort", () => reject(s.reason));
    });
  };
})();`

// A call the API never answers ends at the dashboard's per-call limit
// (REQUEST_TIMEOUT_S in api.js) with an error naming it, and the page
// goes on: the routes render and the event stream opens.
func TestDashboardCallThatNeverAnswersEndsAtItsLimit(t *testing.T) {
	b := browsertest.Start(t)
	f := newFixture(t)
	tab := b.Tab(t)
	if _, err := chromedp.Call(tab, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: hangHistory}); err != nil {
		t.Fatalf("installing the hanging /history: %v", err)
	}
	browsertest.Run(t, tab, pageTimeout, "sign in",
		chromedp.Navigate(f.base+"#routes"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), readToken),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)),
	)
	waitJS(t, tab, pageTimeout, `document.getElementById("live").dataset.live === "on"`)
	msg := evalString(t, tab, `document.getElementById("error").hidden ? "" : document.getElementById("error").textContent`)
	if !strings.Contains(msg, "GET /history") || !strings.Contains(msg, "within 10 s") {
		t.Errorf("error shown %q, want one naming GET /history and its 10 s limit", msg)
	}
	if n := evalString(t, tab, `String(document.querySelectorAll('article[data-route="shop"]').length)`); n != "1" {
		t.Errorf("%s cards for route shop after the limit, want 1", n)
	}
}
