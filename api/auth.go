package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// access is what a route requires.
type access uint8

const (
	// accessOpen: no token needed (/health).
	accessOpen access = iota
	// accessRead: the read or the admin token.
	accessRead
	// accessWrite: the admin token.
	accessWrite
)

// Roles a request can have; part of "who" in logs.
const (
	roleOpen  = "open" // no tokens configured
	roleRead  = "read"
	roleAdmin = "admin"
)

// authenticator checks bearer tokens. Tokens are kept as SHA-256 digests so
// every comparison is over equal-length values in constant time: neither
// the content nor the length of a token leaks through timing.
type authenticator struct {
	admin, read       [sha256.Size]byte
	hasAdmin, hasRead bool
}

func newAuthenticator(admin, read string) authenticator {
	a := authenticator{hasAdmin: admin != "", hasRead: read != ""}
	a.admin = sha256.Sum256([]byte(admin))
	a.read = sha256.Sum256([]byte(read))
	return a
}

func (a authenticator) open() bool { return !a.hasAdmin && !a.hasRead }

// role returns the role a request's token grants, or "" for none.
func (a authenticator) role(r *http.Request) string {
	if a.open() {
		return roleOpen
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	// Both comparisons always run, so timing does not say which matched.
	isAdmin := subtle.ConstantTimeCompare(sum[:], a.admin[:]) & boolInt(a.hasAdmin)
	isRead := subtle.ConstantTimeCompare(sum[:], a.read[:]) & boolInt(a.hasRead)
	switch {
	case isAdmin == 1:
		return roleAdmin
	case isRead == 1:
		return roleRead
	}
	return ""
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// authorize checks the request against the access a route needs, answering
// 401 (no or wrong token) or 403 (read token on a write) itself. It returns
// who made the request, for logs: "<role>@<remote address>".
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, need access) (who string, ok bool) {
	role := s.auth.role(r)
	if need == accessOpen {
		if role == "" {
			role = "anonymous"
		}
		return role + "@" + r.RemoteAddr, true
	}
	if role == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="levee"`)
		writeError(w, http.StatusUnauthorized, "missing or invalid bearer token", nil)
		return "", false
	}
	if need == accessWrite && role == roleRead {
		writeError(w, http.StatusForbidden, "the read token only allows GET; this needs the admin token", nil)
		return "", false
	}
	return role + "@" + r.RemoteAddr, true
}

// guard wraps a route handler with its access check and passes on who.
func (s *Server) guard(need access, h func(w http.ResponseWriter, r *http.Request, who string)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, ok := s.authorize(w, r, need)
		if !ok {
			return
		}
		h(w, r, who)
	})
}

// CheckListen refuses to serve the API on an address reachable from other
// hosts without an admin token. Loopback addresses (127.0.0.0/8, ::1,
// "localhost") are allowed open; an empty host (":3035"), an unspecified
// address (0.0.0.0, ::) or any other name or address needs a token.
func CheckListen(addr, adminToken string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--api-listen %q: %w", addr, err)
	}
	if adminToken != "" || isLoopback(host) {
		return nil
	}
	if host == "" {
		host = "all interfaces"
	}
	return fmt.Errorf("--api-listen %q listens on %s, which is not loopback, and no --api-token is set: "+
		"anyone who can reach it could change routes; set --api-token or listen on 127.0.0.1", addr, host)
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	if i := strings.IndexByte(host, '%'); i >= 0 { // zone, e.g. ::1%lo
		host = host[:i]
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
