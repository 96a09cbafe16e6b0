package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/levee-proxy/levee/e2e/browsertest"
)

// composeDashboard opens the compose demo's dashboard on the Routes page
// with the demo's token and checks what docs/getting-started.md says it
// shows: W024 under the broken container. It returns the tab, or nil when
// no browser is installed (outside CI).
func composeDashboard(t *testing.T, api apiClient) context.Context {
	t.Helper()
	if !browsertest.Available(t) {
		return nil
	}
	const timeout = 60 * time.Second
	b := browsertest.Start(t)
	tab := b.SignIn(t, api.base+"/dashboard/#diagnostics", api.token, timeout)
	browsertest.MustWait(t, tab, timeout, `[...document.querySelectorAll('li.diag[data-code="W024"]')].some(li =>
		li.textContent.includes("levee.http.broken.circuitBreaker.threshold") && li.textContent.includes("lots") &&
		/container .*broken/.test(li.closest("section").querySelector("h3").textContent))`)
	browsertest.Eval(t, tab, timeout, `(location.hash = "#routes", "ok")`)
	browsertest.MustWait(t, tab, timeout, `document.querySelector('article[data-route="echo"]')?.dataset.breakerState === "closed"`)
	return tab
}

// composeDashboardOpened checks that the echo breaker's opening reached
// the page live: the transition is on the Activity list and the card left
// closed (it may be half-open already: the demo's cooldown is 5 s).
func composeDashboardOpened(t *testing.T, tab context.Context) {
	t.Helper()
	if tab == nil {
		return
	}
	const timeout = 30 * time.Second
	browsertest.MustWait(t, tab, timeout, `[...document.querySelectorAll("#activity li")].some(li => li.textContent.includes("breaker echo: closed → open (rule error_ratio)"))`)
	browsertest.MustWait(t, tab, timeout, `["open", "half-open"].includes(document.querySelector('article[data-route="echo"]')?.dataset.breakerState)`)
}
