package config

import (
	"fmt"
	"regexp"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// fallbackNameRe is what a fallback may name: a label service name or an
// API entrypoint name.
var fallbackNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// fallbackFields are the circuitBreaker.fallback* and serveStale rows.
// Like every circuitBreaker.* field, setting one turns the
// breaker on.
func fallbackFields() []Field {
	return []Field{
		{Label: "circuitBreaker.fallback", JSON: "config.circuit_breaker.fallback", Kind: KindString, Default: "(none: the breaker answers responseCode)", Code: diagnostics.BadFallback,
			Doc:     "Service (label service name or API entrypoint name) that answers while this route's breaker is open (scope=backend: while every backend's is), beyond the half-open probes, which still go to this route's backends. The fallback uses its own backends, health and breaker; its outcomes never touch this route's breaker, its requests carry `X-Levee-Fallback: <this route>` and are not retried here. Unknown name W080, itself W081, a cycle W082: no fallback. A fallback whose own breaker is open is not followed further: 503 (I084). See docs/circuit-breaker.md.",
			Example: "maintenance", set: setFallbackRoute, get: inBreaker(func(c *CircuitBreaker) any { return c.Fallback.Route })},
		{Label: "circuitBreaker.fallbackStatus", JSON: "config.circuit_breaker.fallback_status", Kind: KindInt, Default: "(the fallback's own status)", Code: diagnostics.BadFallback,
			Doc:     "Status (200-599, not 204, 205 or 304, which carry no content) answered instead of the fallback's own, e.g. a maintenance page served as 503 so that clients and crawlers do not take it for the real page. `Retry-After` of the open breaker is always kept.",
			Example: "503", set: setFallbackStatus, get: inBreaker(func(c *CircuitBreaker) any { return c.Fallback.Status })},
		{Label: "circuitBreaker.serveStale", JSON: "config.circuit_breaker.serve_stale", Kind: KindDuration, Default: "0s (off)", Code: diagnostics.BadFallback,
			Doc:     fmt.Sprintf("While the breaker is open and no fallback route answers, a GET or HEAD is answered with the last 200 answer for the same URL when it is at most this old (up to %s), marked `Age`, `X-Levee-Stale: <age>` and `Warning: 110`. Answers are kept in memory per route, bounded in entries and bytes; `Cache-Control: no-store`/`private` and `Set-Cookie` answers, and answers to a GET that carried a body, are never kept.", MaxServeStale),
			Example: "10m", set: setServeStale, get: inBreaker(func(c *CircuitBreaker) any { return c.Fallback.ServeStale })},
		{Label: "circuitBreaker.serveStaleForCredentials", JSON: "config.circuit_breaker.serve_stale_for_credentials", Kind: KindBool, Default: "false", Code: diagnostics.BadFallback,
			Doc:     "Also keep and serve stale answers for requests with credentials: `Authorization`, `Cookie`, and on a route with basic or forward auth every request, keyed by a hash of every field the route's auth reads or sets (`Authorization`, `Cookie`, forwardAuth's `authRequestHeaders` and `authResponseHeaders`), so a client only ever gets an answer recorded for the same credentials. A forward-auth route without `authRequestHeaders` keeps nothing even so (its auth service reads every field). Off by default: a shared cache must not reuse such answers (RFC 9111 §3.5), and a route with basic or forward auth keeps no stale answers at all.",
			Example: "true", set: setServeStaleForCredentials, get: inBreaker(func(c *CircuitBreaker) any { return c.Fallback.ServeStaleForCredentials })},
	}
}

func setFallbackRoute(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	if s, ok := decode(d, f, key, v, toString, func(s string) error {
		if s != "" && !fallbackNameRe.MatchString(s) { // empty: none, as the canonical form writes it
			return fmt.Errorf("want a service name (letters, digits, '-', '_', '.')")
		}
		return nil
	}); ok {
		d.cb.Fallback.Route = s
	}
}

func setFallbackStatus(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	if n, ok := decode(d, f, key, v, toInt, func(n int) error {
		switch n {
		case 0: // the fallback's own status, as the canonical form writes it
			return nil
		case 204, 205, 304:
			// The fallback's page would have to be dropped: these
			// statuses carry no content (RFC 9110 15.3.5, 15.3.6, 15.4.5).
			return fmt.Errorf("%d carries no content: the fallback's page could not be sent", n)
		}
		return between(200, 599, "200-599 (0: the fallback's own)")(n)
	}); ok {
		d.cb.Fallback.Status = n
	}
}

func setServeStale(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	if t, ok := decode(d, f, key, v, toDuration, func(t time.Duration) error {
		if t < 0 || t > MaxServeStale {
			return fmt.Errorf("must be in 0s-%s", MaxServeStale)
		}
		return nil
	}); ok {
		d.cb.Fallback.ServeStale = t
	}
}

func setServeStaleForCredentials(d *draft, f *Field, key string, v any) {
	d.cbSet = true
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.cb.Fallback.ServeStaleForCredentials = b
	}
}
