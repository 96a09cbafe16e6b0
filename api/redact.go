package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/api/store"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// Password hashes never leave the API. Every answer that shows an
// entrypoint (GET /entrypoints, GET /entrypoints/{id}, the answers of
// writes and bulk writes, the dashboard, which reads these) shows each
// basicAuth users line "name:hash" as "name:" + RedactedHash: a bcrypt
// hash is a password's offline-crackable stand-in, and a read token, a
// scraper or a page that reached the API must not get it.
//
// So that a client can still GET an entrypoint, change it and PUT it back,
// a written users line whose hash is RedactedHash keeps the hash stored
// for that user name in the entrypoint of the same id. A placeholder with
// no stored hash to stand for (a new entrypoint, a new user, a renamed
// one) is refused with 422: nothing is stored that would lock the user
// out. A real hash in the line replaces the stored one, as before.

// RedactedHash is shown in place of every basicAuth users hash.
const RedactedHash = "(redacted)"

// redactedEntrypoint returns ep with its users' hashes replaced by
// RedactedHash, and whether there was anything to redact. ep itself is
// not changed.
func redactedEntrypoint(ep config.Entrypoint) (config.Entrypoint, bool) {
	ba := ep.Access.BasicAuth
	if ba == nil || len(ba.Users) == 0 {
		return ep, false
	}
	c := *ba
	c.Users = make([]string, len(ba.Users))
	for i, line := range ba.Users {
		if user, _, ok := strings.Cut(line, ":"); ok {
			c.Users[i] = user + ":" + RedactedHash
		} else {
			c.Users[i] = RedactedHash // not name:hash: it may hold anything
		}
	}
	ep.Access.BasicAuth = &c
	return ep, true
}

// encodeShown encodes ep as an answer shows it: redacted.
func (s *Server) encodeShown(ep config.Entrypoint) ([]byte, error) {
	ep, _ = redactedEntrypoint(ep)
	return s.codec.Encode(ep)
}

// shownPayload is a stored entry's payload as an answer shows it.
func (s *Server) shownPayload(e Entry) (json.RawMessage, error) {
	if _, secret := redactedEntrypoint(e.Entrypoint); !secret {
		return e.Payload, nil
	}
	p, err := s.encodeShown(e.Entrypoint)
	if err != nil {
		return nil, fmt.Errorf("payload of entrypoint %q: %w", e.Entrypoint.ID, err)
	}
	return p, nil
}

// restoreHashes puts back, in a written entrypoint, the stored hash of
// each users line that holds RedactedHash. It reports whether it changed
// anything; an error says which line cannot be restored.
func (s *Server) restoreHashes(ep config.Entrypoint) (config.Entrypoint, bool, error) {
	ba := ep.Access.BasicAuth
	if ba == nil || !slices.ContainsFunc(ba.Users, isRedactedLine) {
		return ep, false, nil
	}
	var stored []string
	if e, ok := s.store.Get(ep.ID); ok && e.Entrypoint.Access.BasicAuth != nil {
		stored = e.Entrypoint.Access.BasicAuth.Users
	}
	users, err := restoredUsers(ba.Users, stored, "entrypoint "+strconv.Quote(ep.ID))
	if err != nil {
		return ep, false, err
	}
	c := *ba
	c.Users = users
	ep.Access.BasicAuth = &c
	return ep, true, nil
}

// restoredUsers is lines with the stored hash (from stored, the users
// lines of owner as stored) put back in each line that holds
// RedactedHash; an error names the line that cannot be restored.
func restoredUsers(lines, stored []string, owner string) ([]string, error) {
	out := slices.Clone(lines)
	for i, line := range out {
		if !isRedactedLine(line) {
			continue
		}
		user, _, named := strings.Cut(line, ":")
		if !named {
			return nil, fmt.Errorf("basic_auth.users line %q: %s without a user name stands for no stored hash: send name:hash", line, RedactedHash)
		}
		hash, ok := storedHash(stored, user)
		if !ok {
			return nil, fmt.Errorf("basic_auth.users line %q: %s stands for a stored hash, and %s stores none for user %q: send the bcrypt hash (htpasswd -nbB name password)",
				line, RedactedHash, owner, user)
		}
		out[i] = user + ":" + hash
	}
	return out, nil
}

// isRedactedLine reports whether a users line holds the placeholder.
func isRedactedLine(line string) bool {
	_, hash, ok := strings.Cut(line, ":")
	return (ok && hash == RedactedHash) || line == RedactedHash
}

// storedHash returns the hash stored for user, if any.
func storedHash(lines []string, user string) (string, bool) {
	if user == "" {
		return "", false
	}
	for _, l := range lines {
		if u, hash, ok := strings.Cut(l, ":"); ok && u == user && hash != RedactedHash {
			return hash, true
		}
	}
	return "", false
}

// withStoredHashes restores the placeholders of a decoded payload and, if
// it did, validates the result again, so that its diagnostics are those
// of what will be stored. On failure it returns the status and message.
func (s *Server) withStoredHashes(ep config.Entrypoint, ds []diagnostics.Diagnostic, src diagnostics.Source) (config.Entrypoint, []diagnostics.Diagnostic, int, string) {
	restored, changed, err := s.restoreHashes(ep)
	if err != nil {
		return ep, ds, http.StatusUnprocessableEntity, err.Error()
	}
	if !changed {
		return ep, ds, 0, ""
	}
	payload, err := s.codec.Encode(restored)
	if err != nil {
		return ep, ds, http.StatusInternalServerError, fmt.Sprintf("encode entrypoint %q: %v", ep.ID, err)
	}
	src.Provider = config.SourceAPI
	again, ds, err := s.codec.Decode(config.FormatJSON, payload, src)
	if err != nil {
		status, msg, _ := inputFailure(err)
		return ep, ds, status, msg
	}
	again, ds = store.OwnEntrypoint(again, ds)
	return again, ds, 0, ""
}
