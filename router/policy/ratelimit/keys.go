package ratelimit

import (
	"crypto/sha256"
	"encoding/hex"
	"hash/maphash"
	"net/http"
	"net/netip"
	"strings"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Key is what a bucket (or an in-flight counter) is kept per: a client
// address, or the 64-bit seeded hash of a Host or header value. Keys have
// a fixed size whatever the client sends, so the memory bound of a Store
// is a bound in bytes too.
type Key struct {
	addr netip.Addr
	hash uint64
}

// Criterion extracts a request's key by a sourceCriterion (ip, host,
// header:<name>).
type Criterion struct {
	kind    byte // 'i' ip, 'h' host, 'H' header
	header  string
	depth   int
	trusted []netip.Prefix
	seed    maphash.Seed
}

// NewCriterion compiles a validated sourceCriterion; an unknown one is
// taken as ip (the validator reports it).
func NewCriterion(s string, env policy.Env) Criterion {
	c := Criterion{kind: 'i', trusted: env.TrustedProxies, seed: maphash.MakeSeed()}
	switch {
	case s == config.CriterionHost:
		c.kind = 'h'
	case strings.HasPrefix(s, config.CriterionHeader):
		c.kind, c.header = 'H', http.CanonicalHeaderKey(s[len(config.CriterionHeader):])
	}
	return c
}

// Of returns r's key. ok is false when the request cannot be keyed for
// certain: the client address cannot be determined (a garbled
// X-Forwarded-For from a trusted proxy), or the criterion's header came
// more than once (a random first value beside the real one would make
// every request a bucket of its own, and the backend may read either).
// The caller refuses (Unkeyed) rather than share or split buckets.
func (c *Criterion) Of(r *http.Request) (k Key, ok bool) {
	switch c.kind {
	case 'h':
		// Keyed by the host as routing reads it: "H.TEST.:80" and
		// "[h.test]" are h.test's bucket, not buckets of their own.
		var buf [256]byte
		return Key{hash: maphash.Bytes(c.seed, config.AppendRequestHost(buf[:0], r.Host))}, true
	case 'H':
		// Requests without the header share the bucket of "".
		vs := r.Header[c.header]
		if len(vs) > 1 {
			return Key{}, false
		}
		v := ""
		if len(vs) == 1 {
			v = vs[0]
		}
		return Key{hash: maphash.String(c.seed, v)}, true
	}
	a, ok := policy.ClientIP(r, c.trusted, c.depth)
	return Key{addr: a}, ok
}

// Unkeyed is the refusal of a request Of could not key: 400 bad-header
// for a criterion header sent twice, else 403 (no client address).
func (c *Criterion) Unkeyed() (status int, reason, msg string) {
	if c.kind == 'H' {
		return http.StatusBadRequest, policy.ReasonBadHeader, c.header + " sent more than once\n"
	}
	return http.StatusForbidden, policy.ReasonForbiddenIP, "client address could not be determined\n"
}

// FleetName returns r's key as every replica of a fleet spells it (the
// Key's hashes are seeded per process): the client address, or a
// SHA-256 prefix of the Host or header value, so that a store key has a
// bounded length whatever the client sends. ok is as for Of.
func (c *Criterion) FleetName(r *http.Request) (name string, ok bool) {
	switch c.kind {
	case 'h':
		var buf [256]byte
		sum := sha256.Sum256(config.AppendRequestHost(buf[:0], r.Host))
		return "h:" + hex.EncodeToString(sum[:16]), true
	case 'H':
		vs := r.Header[c.header]
		if len(vs) > 1 {
			return "", false
		}
		v := ""
		if len(vs) == 1 {
			v = vs[0]
		}
		sum := sha256.Sum256([]byte(v))
		return "H:" + hex.EncodeToString(sum[:16]), true
	}
	a, ok := policy.ClientIP(r, c.trusted, c.depth)
	return "ip:" + a.String(), ok
}
