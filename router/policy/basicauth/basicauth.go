// Package basicauth is the basic-auth policy: HTTP Basic authentication
// (RFC 7617) against htpasswd lines with bcrypt hashes. A request without
// valid credentials is refused with 401, a WWW-Authenticate challenge
// naming the realm, and X-Levee-Diagnostic: unauthorized.
//
// # Failing closed
//
// A users line that is not name:bcrypt-hash (MD5-crypt, SHA-1, crypt,
// plain text), a users file that cannot be read, or no users at all make
// the policy refuse every request (403, policy-misconfigured). Only
// bcrypt is verified, with golang.org/x/crypto/bcrypt.
//
// # Timing
//
// The user name is compared with every configured name in constant time
// (crypto/subtle), without an early exit, and an unknown name is checked
// against a dummy hash of the same cost, so the answer's timing does not
// tell which names exist.
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
// requests one bcrypt each. The plaintext is never stored, and the
// digests are useless without the process's key.
package basicauth

import (
	"bufio"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Name is the policy's name in metrics and logs.
const Name = "basic-auth"

// MaxCached bounds a route's cache of verified credentials.
const MaxCached = 1024

// Cache remembers credentials that verified (see the package doc).
type Cache struct {
	key [32]byte
	// macs are HMAC-SHA-256 states under key, reused (hash.Hash is not
	// safe for concurrent use).
	macs sync.Pool
	mu   sync.Mutex
	ok   map[[32]byte]string // HMAC(user, password) → the hash it verified against
	// dummies are hashes by cost that unknown names are checked against,
	// made on first use (not while the router rebuilds).
	dummies map[int][]byte
}

func (c *Cache) dummy(cost int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d, ok := c.dummies[cost]; ok {
		return d
	}
	d, err := bcrypt.GenerateFromPassword([]byte("levee-dummy-password"), max(cost, bcrypt.MinCost))
	if err != nil {
		d = []byte("$2a$04$invalid")
	}
	if c.dummies == nil {
		c.dummies = make(map[int][]byte)
	}
	c.dummies[cost] = d
	return d
}

// NewCache returns an empty cache with a fresh random key.
func NewCache() *Cache {
	c := &Cache{ok: make(map[[32]byte]string)}
	if _, err := rand.Read(c.key[:]); err != nil {
		panic(fmt.Sprintf("basicauth: no randomness for the cache key: %v", err)) // crypto/rand never fails on supported platforms
	}
	c.macs.New = func() any { return hmac.New(sha256.New, c.key[:]) }
	return c
}

func (c *Cache) digest(user, pass string) [32]byte {
	m := c.macs.Get().(hash.Hash)
	m.Reset()
	_, _ = io.WriteString(m, user)
	_, _ = m.Write(zero[:])
	_, _ = io.WriteString(m, pass)
	var d [32]byte
	m.Sum(d[:0])
	c.macs.Put(m)
	return d
}

var zero [1]byte

// hit reports whether d verified against current (the user's hash now).
func (c *Cache) hit(d [32]byte, current string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.ok[d]
	return ok && h == current // both are configured hashes: no client secret to time
}

func (c *Cache) add(d [32]byte, verified string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.ok) >= MaxCached {
		clear(c.ok)
	}
	c.ok[d] = verified
}

// Len returns the number of cached credentials.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.ok)
}

type user struct {
	name    [32]byte // SHA-256 of the name: every comparison has one length
	hash    []byte
	hashStr string // the same, as the cache's value
}

// Policy is one route's compiled basic auth.
type Policy struct {
	users     []user
	cost      int // of the first user's hash: the dummy's cost
	challenge []string
	remove    bool
	deny      bool
	cache     *Cache
	ref       policy.Refuser
}

// New compiles cfg, reading its users file. Any bad line or an unreadable
// file gives an error and a Policy that refuses every request.
func New(cfg *config.BasicAuth, cache *Cache, env policy.Env) (*Policy, error) {
	realm := cfg.Realm
	if realm == "" {
		realm = config.DefaultRealm
	}
	p := &Policy{
		challenge: []string{`Basic realm="` + realm + `", charset="UTF-8"`},
		remove:    cfg.RemoveHeader,
		cache:     cache,
		ref:       env.Refuser(Name),
	}
	lines := cfg.Users
	var errs []error
	if cfg.UsersFile != "" {
		more, err := readUsersFile(cfg.UsersFile)
		if err != nil {
			errs = append(errs, err)
		}
		lines = append(lines[:len(lines):len(lines)], more...)
	}
	for _, l := range lines {
		name, err := config.CheckBcryptLine(l)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h := l[len(name)+1:]
		p.users = append(p.users, user{name: sha256.Sum256([]byte(name)), hash: []byte(h), hashStr: h})
	}
	if len(p.users) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("no users: nobody can log in"))
	}
	if err := errors.Join(errs...); err != nil {
		p.deny = true
		return p, fmt.Errorf("basicAuth: %w", err)
	}
	p.cost, _ = bcrypt.Cost(p.users[0].hash)
	return p, nil
}

// readUsersFile reads htpasswd lines, skipping blank lines and # comments.
func readUsersFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return out, nil
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
	if !ok || !p.verify(name, pass) {
		w.Header()["Www-Authenticate"] = p.challenge
		p.ref.Refuse(w, http.StatusUnauthorized, policy.ReasonUnauthorized, "authentication required\n")
		return
	}
	policy.RecordUser(w, name)
	if p.remove {
		r.Header.Del("Authorization")
	}
	next.ServeHTTP(w, r)
}

// verify checks name and password: constant-time name lookup, then the
// cache, then bcrypt.
func (p *Policy) verify(name, pass string) bool {
	u := p.lookup(name)
	if u == nil {
		// Same work as a known name: the timing does not tell.
		_ = bcrypt.CompareHashAndPassword(p.cache.dummy(p.cost), []byte(pass))
		return false
	}
	d := p.cache.digest(name, pass)
	if p.cache.hit(d, u.hashStr) {
		return true
	}
	if bcrypt.CompareHashAndPassword(u.hash, []byte(pass)) != nil {
		return false
	}
	p.cache.add(d, u.hashStr)
	return true
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
