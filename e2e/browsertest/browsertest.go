// Package browsertest runs headless Chromium for tests through
// github.com/chromedp/chromedp: it finds the browser, starts one per test
// and gives tabs that end with the test, plus the waits and screenshots
// the dashboard tests share.
//
// Chromium is Debian's `chromium` package (.ci/setup.d/chromium.sh
// installs it in CI). A machine without it skips the browser tests with a
// message; under CI=true that is a failure, so CI cannot pass without
// having run them.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Names of the browser binary, in the order they are looked for in PATH;
// LEVEE_TEST_CHROMIUM, when set, is used instead.
var names = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// Find returns the browser binary, or skips the test (fails it when
// CI=true).
func Find(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test needs a browser")
	}
	if p := os.Getenv("LEVEE_TEST_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	msg := "no chromium in PATH (apt-get install chromium, or set LEVEE_TEST_CHROMIUM)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + "; CI must run the browser tests")
	}
	t.Skip(msg)
	return ""
}

// Available reports whether a browser binary can be found, for a test
// that checks a page as one part of a larger scenario: without one it
// leaves that part out, except under CI=true, where it fails.
func Available(t testing.TB) bool {
	t.Helper()
	if testing.Short() {
		t.Log("-short: the dashboard checks are left out")
		return false
	}
	if os.Getenv("LEVEE_TEST_CHROMIUM") != "" || os.Getenv("CI") == "true" {
		return true // Find fails the test under CI when the browser is missing
	}
	for _, n := range names {
		if _, err := exec.LookPath(n); err == nil {
			return true
		}
	}
	t.Log("no chromium in PATH: the dashboard checks are left out")
	return false
}

// Browser is one headless Chromium process.
type Browser struct {
	ctx context.Context
}

// Start runs a headless browser for the test; it is closed at cleanup.
func Start(t testing.TB) *Browser {
	t.Helper()
	return StartWith(t)
}

// StartWith is Start with more command-line flags (chromedp.Flag).
func StartWith(t testing.TB, flags ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	bin := Find(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	opts = append(opts, flags...)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	// The first Do starts the browser, which lives as long as the context
	// given to it: bctx, not one with a deadline.
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("starting %s: %v", bin, err)
	}
	t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
	return &Browser{ctx: bctx}
}

// Tab opens a new tab (its own sessionStorage) closed at the test's
// cleanup.
func (b *Browser) Tab(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	if err := chromedp.Do(ctx); err != nil {
		cancel()
		t.Fatalf("new tab: %v", err)
	}
	t.Cleanup(cancel)
	return ctx
}

// Run runs actions in the tab within timeout, failing the test with what
// was being done.
func Run(t testing.TB, tab context.Context, timeout time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		page, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 4000) : ""`))
		t.Fatalf("%s: %v\npage text:\n%s", what, err, page)
	}
}

// WaitTrue polls a JavaScript expression until it is true or timeout
// passes; it returns how long it took.
func WaitTrue(tab context.Context, timeout time.Duration, expr string) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(tab, timeout)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond)))
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return time.Since(start), fmt.Errorf("%s not true within %s", expr, timeout)
		}
		return time.Since(start), fmt.Errorf("waiting for %s: %w", expr, err)
	}
	return time.Since(start), nil
}

// Screenshot writes a full-page PNG of the tab to path.
func Screenshot(tab context.Context, path string) error {
	ctx, cancel := context.WithTimeout(tab, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return fmt.Errorf("screenshot %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, png, 0o644)
}

// MustWait is WaitTrue that fails the test (showing the page's text) when
// the expression does not become true in time.
func MustWait(t testing.TB, tab context.Context, timeout time.Duration, expr string) time.Duration {
	t.Helper()
	took, err := WaitTrue(tab, timeout, expr)
	if err != nil {
		text, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.body ? document.body.innerText.slice(0, 4000) : ""`))
		t.Fatalf("%v\npage text:\n%s", err, text)
	}
	return took
}

// Eval evaluates a JavaScript expression (awaiting a promise) to a string.
func Eval(t testing.TB, tab context.Context, timeout time.Duration, expr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, timeout)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return s
}

// SignIn opens the dashboard at url (…/dashboard/#page) in a new tab,
// signs in with token through its form and waits until its event stream
// is live; an error the page shows then fails the test.
func (b *Browser) SignIn(t testing.TB, url, token string, timeout time.Duration) context.Context {
	t.Helper()
	tab := b.Tab(t)
	Run(t, tab, timeout, "sign in",
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS(`#login-form button[type=submit]`)),
	)
	MustWait(t, tab, timeout, `document.getElementById("live").dataset.live === "on"`)
	// A call that failed or hit its limit while loading leaves the page
	// partly empty: name it rather than fail later on what is missing.
	if msg := Eval(t, tab, timeout, `(e => e && !e.hidden ? e.textContent : "")(document.getElementById("error"))`); msg != "" {
		t.Errorf("the dashboard signed in with an error shown: %s", msg)
	}
	return tab
}
