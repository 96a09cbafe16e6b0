// Package basicauth is the basic-auth policy: HTTP Basic authentication
// (RFC 7617) against htpasswd lines. A request without valid credentials
// is refused with 401, a WWW-Authenticate challenge naming the realm, and
// X-Levee-Diagnostic: unauthorized.
//
// # Hashes, and failing closed
//
// bcrypt (cost config.MinBcryptCost-config.MaxBcryptCost) is verified
// with golang.org/x/crypto/bcrypt; `$apr1$` (MD5-crypt) and `{SHA}` are
// accepted for migration, with a warning, and verified with
// github.com/tg123/go-htpasswd. A users line that is none of these (plain
// text, crypt, a bcrypt cost above the maximum), a users file that cannot
// be read (missing, not a regular file, over MaxUsersFile bytes), or no
// users at all make the policy refuse every request (403,
// policy-misconfigured).
//
// # CPU: the process-wide bound and the failure budget
//
// A check that the cache cannot answer runs in one of the process's
// Slots (shared by every basic-auth route), waiting at most the Slots'
// wait; past it the request is refused (503, auth-busy, Retry-After: 1).
// Each client address has a failure budget per route (FailureBurst, then
// one every FailureEvery); a client that has spent it is refused without
// any check (429, auth-throttled, Retry-After). So a flood of wrong
// passwords costs the flooding client, and at most the slots' share of
// the cores, never the other routes. These refusals are Levee's own:
// they never reach the backend or its breaker.
//
// # Timing
//
// The user name is compared with every configured name in constant time
// (crypto/subtle), without an early exit. Every failed check costs the
// route's most expensive hash: an unknown name is checked against a dummy
// of that kind and cost, and a wrong password for a cheaper hash is
// followed by the same dummy check, so the answer's timing does not tell
// which names exist.
//
// # The verified-credentials cache
//
// bcrypt is deliberately slow (tens of milliseconds at cost 10), and a
// browser sends the same credentials on every request of a keep-alive
// connection. Credentials that verified are remembered in a Cache kept in
// the route's state: the key is an HMAC-SHA-256 of user and password
// under a random per-process key, the value the hash they verified
// against. A hit needs exactly the same user and password, and the hash
// must still be the user's current one, so a changed password or a
// removed user is never let in from the cache. Failures are never cached,
// so guessing fills nothing. The cache holds at most MaxCached entries
// (about 100 bytes each); when full, it is emptied, which costs the next
// requests one check each. The plaintext is never stored, and the
// digests are useless without the process's key.
package basicauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/ratelimit"
)

// Name is the policy's name in metrics and logs.
const Name = "basic-auth"

// Policy is one route's compiled basic auth.
type Policy struct {
	users     []user
	costliest config.Hash // the most expensive hash: the dummy's kind and cost
	dummy     matcher     // of costliest's kind and cost
	challenge []string
	remove    bool
	deny      bool
	cache     *Cache
	slots     *Slots
	client    ratelimit.Criterion
	now       func() time.Time
	ref       policy.Refuser
}

// Notes are the warnings only New can see, about the users file's lines
// (the validator reports the inline users').
type Notes struct {
	// Weak are W055 messages, one per apr1 or {SHA} line of the file.
	Weak []string
	// Mixed is W056's message when the file makes the costs differ.
	Mixed string
}

// New compiles cfg, reading its users file; cache is the route's state,
// slots the process's bound on checks. Any bad line or an unreadable
// file gives an error and a Policy that refuses every request.
func New(cfg *config.BasicAuth, cache *Cache, slots *Slots, env policy.Env) (*Policy, Notes, error) {
	realm := cfg.Realm
	if realm == "" {
		realm = config.DefaultRealm
	}
	p := &Policy{
		challenge: []string{`Basic realm="` + realm + `", charset="UTF-8"`},
		remove:    cfg.RemoveHeader,
		cache:     cache,
		slots:     slots,
		client:    ratelimit.NewCriterion(config.CriterionIP, env),
		now:       env.Clock(),
		ref:       env.Refuser(Name),
	}
	var notes Notes
	var errs []error
	var names []string
	var hashes []config.Hash
	add := func(lines []string, fromFile bool) {
		for _, l := range lines {
			name, u, err := parseUser(l)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if fromFile && u.kind.Kind.Weak() {
				notes.Weak = append(notes.Weak, config.WeakHashMessage(name, u.kind))
			}
			p.users = append(p.users, u)
			names, hashes = append(names, name), append(hashes, u.kind)
		}
	}
	add(cfg.Users, false)
	inlineMixed := config.MixedCosts(names, hashes)
	if cfg.UsersFile != "" {
		lines, err := readUsersFile(cfg.UsersFile)
		if err != nil {
			errs = append(errs, err)
		}
		add(lines, true)
	}
	if m := config.MixedCosts(names, hashes); m != "" && inlineMixed == "" {
		notes.Mixed = config.MixedCostsMessage(m)
	}
	if len(p.users) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no users: nobody can log in"))
	}
	if err := errors.Join(errs...); err != nil {
		p.deny = true
		return p, notes, fmt.Errorf("basicAuth: %w", err)
	}
	p.costliest = p.users[0].kind
	for _, u := range p.users[1:] {
		if weight(u.kind) > weight(p.costliest) {
			p.costliest = u.kind
		}
	}
	p.dummy = newDummy(p.costliest)
	return p, notes, nil
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// Stage implements policy.Policy.
func (p *Policy) Stage() policy.Stage { return policy.StageAuth }

// Serve implements policy.Policy.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if p.deny {
		p.ref.Refuse(w, http.StatusForbidden, policy.ReasonPolicyMisconfigured, "access policy misconfigured\n")
		return
	}
	name, pass, ok := r.BasicAuth()
	v, retry := verdictWrong, time.Duration(0)
	if ok {
		v, retry = p.verify(r, name, pass)
	}
	switch v {
	case verdictOK:
		policy.RecordUser(w, name)
		if p.remove {
			r.Header.Del("Authorization")
		}
		next.ServeHTTP(w, r)
	case verdictThrottled:
		w.Header().Set("Retry-After", strconv.FormatInt(max(int64(math.Ceil(retry.Seconds())), 1), 10))
		p.ref.Refuse(w, http.StatusTooManyRequests, policy.ReasonAuthThrottled, "too many failed logins from this address\n")
	case verdictBusy:
		w.Header().Set("Retry-After", "1")
		p.ref.Refuse(w, http.StatusServiceUnavailable, policy.ReasonAuthBusy, "password checks are busy, try again\n")
	case verdictNoClient:
		p.ref.Refuse(w, http.StatusForbidden, policy.ReasonForbiddenIP, "client address could not be determined\n")
	default:
		w.Header()["Www-Authenticate"] = p.challenge
		p.ref.Refuse(w, http.StatusUnauthorized, policy.ReasonUnauthorized, "authentication required\n")
	}
}

// verdict is what verify decided.
type verdict uint8

const (
	verdictWrong     verdict = iota // 401
	verdictOK                       // to the backend
	verdictThrottled                // the client's failure budget is spent: 429
	verdictBusy                     // no check slot within the wait: 503
	verdictNoClient                 // the client address is unknown: 403
)

// verify checks name and password: constant-time name lookup, then the
// cache, then the client's failure budget and a slot, then the hash. The
// budget is spent before the check (concurrent guesses cannot overdraw
// it) and given back when the password was right. retry is the wait
// before the budget has a token again (verdictThrottled).
func (p *Policy) verify(r *http.Request, name, pass string) (v verdict, retry time.Duration) {
	u := p.lookup(name)
	var d [32]byte
	if u != nil {
		d = p.cache.digest(name, pass)
		if p.cache.hit(d, u.hashStr) {
			return verdictOK, 0
		}
	}
	k, ok := p.client.Of(r)
	if !ok {
		return verdictNoClient, 0
	}
	now := p.now()
	res := p.cache.budget(k).ReserveN(now, 1)
	if delay := res.DelayFrom(now); !res.OK() || delay > 0 {
		res.CancelAt(now)
		return verdictThrottled, delay
	}
	if err := p.slots.acquire(r.Context()); err != nil {
		res.CancelAt(now) // not the client's failure
		return verdictBusy, 0
	}
	matched := p.check(u, pass)
	p.slots.release()
	if !matched {
		return verdictWrong, 0
	}
	res.CancelAt(now)
	p.cache.add(d, u.hashStr)
	return verdictOK, 0
}

// check runs u's hash (the dummy for an unknown name). A failure costs
// the route's most expensive hash whatever the name: a wrong password
// for a cheaper hash is followed by the dummy check.
func (p *Policy) check(u *user, pass string) bool {
	if u == nil {
		_ = p.dummy.MatchesPassword(pass)
		return false
	}
	if u.check.MatchesPassword(pass) {
		return true
	}
	if weight(u.kind) < weight(p.costliest) {
		_ = p.dummy.MatchesPassword(pass)
	}
	return false
}

// lookup returns name's user, comparing with every user in constant time.
func (p *Policy) lookup(name string) *user {
	var found *user
	n := sha256.Sum256([]byte(name))
	for i := range p.users {
		if subtle.ConstantTimeCompare(p.users[i].name[:], n[:]) == 1 {
			found = &p.users[i]
		}
	}
	return found
}
