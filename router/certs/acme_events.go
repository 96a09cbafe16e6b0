package certs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/caddyserver/certmagic"
	"github.com/mholt/acmez/v3/acme"
)

// retrySchedule is certmagic's wait after the nth failed attempt to obtain
// a certificate (its retryIntervals, which it does not export), for the
// "next try" of W044. Beyond the list it waits the last value.
var retrySchedule = []time.Duration{
	time.Minute, 2 * time.Minute, 2 * time.Minute, 5 * time.Minute,
	10 * time.Minute, 10 * time.Minute, 10 * time.Minute,
	20 * time.Minute, 20 * time.Minute, 20 * time.Minute, 20 * time.Minute,
	30 * time.Minute, 30 * time.Minute, 30 * time.Minute, 30 * time.Minute, 30 * time.Minute, 30 * time.Minute,
	time.Hour,
}

func retryWait(failures int) time.Duration {
	return retrySchedule[min(max(failures-1, 0), len(retrySchedule)-1)]
}

// onEvent is certmagic's event hook: failures become W044 (and the
// failure metric), a certificate obtained clears them and refreshes the
// expiry metric.
func (a *ACME) onEvent(ctx context.Context, event string, data map[string]any) error {
	switch event {
	case "cached_managed_cert":
		// A certificate loaded from --cert-dir (at start, or one another
		// Levee process obtained): served now, so its expiry is known.
		a.store.RefreshExpiry()
	case "cert_failed":
		host, _ := data["identifier"].(string)
		err, _ := data["error"].(error)
		a.fails.WithLabelValues(host).Inc()
		a.recordFailure(ctx, host, err, data["renewal"] == true)
	case "cert_obtained":
		host, _ := data["identifier"].(string)
		a.mu.Lock()
		_, hadFailed := a.state[host]
		delete(a.state, host)
		if hadFailed {
			a.publishLocked()
		}
		a.mu.Unlock()
		a.opts.Logger.Info().Str("host", host).Bool("renewal", data["renewal"] == true).Msg("ACME: certificate obtained")
		a.store.RefreshExpiry()
	}
	return nil
}

func (a *ACME) recordFailure(ctx context.Context, host string, err error, renewal bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancels[host] == nil {
		return // no longer managed
	}
	st := a.state[host]
	if st == nil {
		st = &hostState{}
		a.state[host] = st
	}
	st.failures++
	if n, ok := ctx.Value(certmagic.AttemptsCtxKey).(*int); ok && n != nil {
		st.failures = *n + 1 // the attempt that just failed
	}
	st.challenge = challengesOf(err)
	st.lastErr = caError(err)
	st.nextTry = a.opts.Now().Add(retryWait(st.failures))
	a.opts.Logger.Warn().Str("code", "W044").Str("host", host).Str("challenge", st.challenge).Bool("renewal", renewal).
		Int("attempt", st.failures).Time("next_try", st.nextTry).Str("error", st.lastErr).Msg("ACME: certificate not obtained")
	a.publishLocked()
}

// challengesOf names the challenge types the CA tried and found invalid,
// from the ACME problem's authorization (RFC 8555 7.1.4, 8).
func challengesOf(err error) string {
	if de := (*dnsError)(nil); errors.As(err, &de) {
		return ChallengeDNS01 + " (the record was not published through " + de.provider + ")"
	}
	var p acme.Problem
	if !errors.As(err, &p) {
		return "none (the order failed before any challenge)"
	}
	authz, ok := p.Resource.(acme.Authorization)
	if !ok {
		return "none (the order failed before any challenge)"
	}
	var types []string
	for _, c := range authz.Challenges {
		if (c.Status == acme.StatusInvalid || c.Error != nil) && !slices.Contains(types, c.Type) {
			types = append(types, c.Type)
		}
	}
	if len(types) == 0 {
		return "unknown"
	}
	return strings.Join(types, ", ")
}

// caError is the CA's own words when there are some (the ACME problem's
// type and detail), else the error.
func caError(err error) string {
	if err == nil {
		return "unknown error"
	}
	var p acme.Problem
	if errors.As(err, &p) {
		return fmt.Sprintf("%s: %s", p.Type, p.Detail)
	}
	return err.Error()
}

// failureHint is W044's fix for host, by the challenges that failed.
func failureHint(host, challenge string) string {
	if strings.HasPrefix(challenge, ChallengeDNS01) {
		return "check the DNS provider's credentials and that it serves the zone of " + host +
			" (the record is _acme-challenge." + strings.TrimPrefix(host, "*.") + "), and --acme-dns-resolvers"
	}
	return "check that " + host + " resolves to Levee and that the CA reaches the plain (HTTP-01) and TLS (TLS-ALPN-01) listeners"
}
