package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
)

// The cross-field rules that read a group a named policy can give (the
// access groups, cors.*, headers.*) together with a route's own fields
// (circuitBreaker.*, methods, tls.*). They run when the route's fields are
// decoded, on its own groups, and again once its policies are resolved
// (Resolve), on the merged groups: a finding only the merged route has is
// reported on the route's policies key.

// crossFinding is what one rule found: a diagnostic without its key.
type crossFinding struct {
	code diagnostics.Code
	// label is the route's field the finding is reported on when the
	// route's own fields are checked.
	label                      string
	value, fallback, msg, hint string
}

// crossFindings are the findings of every rule on ep.
func crossFindings(ep *Entrypoint) []crossFinding {
	return slices.Concat(staleFindings(ep), corsMethodsFindings(ep), hstsHeaderFindings(ep))
}

// staleFindings reports a serveStale that can keep no answer (the
// proxy's stale cache, router/proxy/stale_key.go): on a route with basic
// or forward auth every request is credentialed, and is kept only with
// serveStaleForCredentials, and then not when forward auth sends its
// service every field (no authRequestHeaders).
func staleFindings(ep *Entrypoint) []crossFinding {
	cb, a := ep.CircuitBreaker, ep.Access
	if cb == nil || cb.Fallback.ServeStale <= 0 || (a.BasicAuth == nil && a.ForwardAuth == nil) {
		return nil
	}
	fb := cb.Fallback
	f := crossFinding{code: diagnostics.StaleNeverKept, label: "circuitBreaker.serveStale", value: fb.ServeStale.String(), fallback: "no stale answers"}
	switch {
	case !fb.ServeStaleForCredentials:
		f.msg = "serveStale keeps no answer on a route with basic or forward auth without serveStaleForCredentials: every request carries credentials"
		f.hint = "set circuitBreaker.serveStaleForCredentials=true to keep answers per credentials, or remove serveStale"
	case a.ForwardAuth != nil && len(a.ForwardAuth.AuthRequestHeaders) == 0:
		f.msg = "serveStaleForCredentials keeps no answer on a forward-auth route without forwardAuth.authRequestHeaders: its auth service reads every field"
		f.hint = "list the fields the auth service reads in forwardAuth.authRequestHeaders"
	default:
		return nil
	}
	return []crossFinding{f}
}

// corsMethodsFindings reports CORS on a route whose methods leave out
// OPTIONS: the route is matched before its policies run, so a preflight
// (Fetch standard, CORS protocol) would never reach the CORS policy.
func corsMethodsFindings(ep *Entrypoint) []crossFinding {
	if ep.Transform.CORS == nil || len(ep.Methods) == 0 || slices.Contains(ep.Methods, "OPTIONS") {
		return nil
	}
	return []crossFinding{{code: diagnostics.BadCORS, label: "methods", value: strings.Join(ep.Methods, ","), fallback: "preflights not answered",
		msg:  "cors.allowOrigins with methods that leave out OPTIONS: preflight requests do not match the route",
		hint: "add OPTIONS to methods"}}
}

// hstsHeaderFindings reports a Strict-Transport-Security header set by
// the headers policy: it replaces tls.hsts's and is sent over plain HTTP
// too, which RFC 6797 7.2 forbids.
func hstsHeaderFindings(ep *Entrypoint) []crossFinding {
	h := ep.Transform.Headers
	if h == nil {
		return nil
	}
	var out []crossFinding
	for _, m := range []map[string]string{h.Response, h.ResponseAdd} {
		v, set := m["Strict-Transport-Security"]
		if !set {
			continue
		}
		msg := "Strict-Transport-Security set by the headers policy is sent over plain HTTP too, which RFC 6797 7.2 forbids"
		if ep.TLS.HSTS > 0 {
			msg = "Strict-Transport-Security set by the headers policy replaces the header of tls.hsts (" + ep.TLS.HSTSHeader() + ") and is sent over plain HTTP too"
		}
		out = append(out, crossFinding{code: diagnostics.HSTSHeaderOverride, label: "headers.customResponseHeaders", value: v, fallback: "the header as set",
			msg: msg, hint: "remove the header and use tls.hsts (with tls.hsts.includeSubDomains and tls.hsts.preload)"})
	}
	return out
}

// addFindings reports fs on the route's own fields.
func (d *draft) addFindings(fs []crossFinding) {
	for _, f := range fs {
		key := d.givenOr(f.label, f.value).key
		if f.code == diagnostics.HSTSHeaderOverride {
			key = d.tr.sts.key
		}
		d.add(f.code, key, f.value, f.fallback, f.msg, f.hint)
	}
}

// policyFindings are the diagnostics of the findings the resolved route
// has and the route's own fields did not (those were reported when they
// were decoded), on its policies key.
func policyFindings(own, resolved *Entrypoint, src diagnostics.Source) []diagnostics.Diagnostic {
	had := crossFindings(own)
	var out []diagnostics.Diagnostic
	for _, f := range crossFindings(resolved) {
		if slices.Contains(had, f) {
			continue
		}
		names := strings.Join(resolved.Policies, ",")
		out = append(out, diagnostics.New(f.code, src, "policies", names, f.fallback,
			fmt.Sprintf("%s (with the groups of policies=%s)", f.msg, names), f.hint))
	}
	return out
}
