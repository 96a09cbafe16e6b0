package config

import (
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// HashKind is the kind of an htpasswd hash.
type HashKind uint8

// The htpasswd hashes basic auth accepts. bcrypt is the one to use;
// MD5-crypt ("$apr1$", what `htpasswd -nb` writes) and unsalted SHA-1
// ("{SHA}") are accepted so that files written for Apache, nginx and
// Traefik keep working, with a warning (W055): both are fast to brute
// force once the hash leaks.
const (
	HashBcrypt HashKind = iota + 1
	HashAPR1
	HashSHA1
)

// String names the kind as htpasswd's options do.
func (k HashKind) String() string {
	switch k {
	case HashBcrypt:
		return "bcrypt"
	case HashAPR1:
		return "apr1 (MD5-crypt)"
	case HashSHA1:
		return "SHA-1"
	}
	return "unknown"
}

// Weak reports whether the kind is accepted only for migration.
func (k HashKind) Weak() bool { return k == HashAPR1 || k == HashSHA1 }

// MinBcryptCost and MaxBcryptCost bound a bcrypt hash's cost. One check
// costs 2^cost rounds: about 50 ms of a core at 10, 0.8 s at 14, over
// two minutes at 31. Past MaxBcryptCost a single login attempt holds a
// verification slot (and a core) for seconds, so such a hash is refused.
const (
	MinBcryptCost = 4
	MaxBcryptCost = 14
)

// Hash is what CheckHtpasswdLine learned of a line's hash.
type Hash struct {
	Kind HashKind
	// Cost is bcrypt's cost; 0 for the other kinds.
	Cost int
}

// CheckHtpasswdLine checks an htpasswd line "name:hash": a non-empty name
// and a hash Levee can verify: bcrypt ($2a$, $2b$, $2y$; cost
// MinBcryptCost-MaxBcryptCost; 53 characters of bcrypt's base64), apr1
// ($apr1$salt$ and 22 characters) or {SHA} (base64 of 20 bytes). Plain
// text, crypt(3) and glibc's "$1$" are refused.
func CheckHtpasswdLine(line string) (user string, h Hash, err error) {
	user, hash, ok := strings.Cut(line, ":")
	if !ok || user == "" {
		return "", Hash{}, fmt.Errorf("want name:hash")
	}
	switch {
	case strings.HasPrefix(hash, "$$"):
		// Compose turns "$$" into "$"; a label set another way (docker run
		// -l, the API) takes the hash as written.
		return user, Hash{}, fmt.Errorf("user %q: hash starts with $$: write $$ only in a compose file, where it stands for $", user)
	case strings.HasPrefix(hash, "$apr1$"):
		return user, Hash{Kind: HashAPR1}, checkAPR1(user, hash)
	case strings.HasPrefix(hash, "{SHA}"):
		return user, Hash{Kind: HashSHA1}, checkSHA1(user, hash)
	case strings.HasPrefix(hash, "$2"):
		cost, err := checkBcrypt(user, hash)
		return user, Hash{Kind: HashBcrypt, Cost: cost}, err
	}
	return user, Hash{}, fmt.Errorf("user %q: hash is neither bcrypt, apr1 nor {SHA} (plain text is never accepted); create it with htpasswd -nbB", user)
}

func checkBcrypt(user, hash string) (int, error) {
	if len(hash) != 60 || hash[3] != '$' || hash[6] != '$' || !strings.ContainsRune("aby", rune(hash[2])) ||
		hash[4] < '0' || hash[4] > '9' || hash[5] < '0' || hash[5] > '9' || !cryptBase64(hash[7:]) {
		return 0, fmt.Errorf("user %q: hash is not bcrypt; create it with htpasswd -nbB", user)
	}
	cost := int(hash[4]-'0')*10 + int(hash[5]-'0')
	if cost < MinBcryptCost || cost > MaxBcryptCost {
		return cost, fmt.Errorf("user %q: bcrypt cost %d is outside %02d-%02d (one check at cost 31 takes minutes of CPU); re-hash with htpasswd -nbB -C 10",
			user, cost, MinBcryptCost, MaxBcryptCost)
	}
	return cost, nil
}

// checkAPR1 checks "$apr1$" salt "$" digest: a salt of 1-8 and a digest
// of 22 characters of crypt's base64.
func checkAPR1(user, hash string) error {
	salt, digest, ok := strings.Cut(hash[len("$apr1$"):], "$")
	if !ok || len(salt) == 0 || len(salt) > 8 || len(digest) != 22 || !cryptBase64(salt) || !cryptBase64(digest) {
		return fmt.Errorf("user %q: malformed $apr1$ hash; create a bcrypt one with htpasswd -nbB", user)
	}
	return nil
}

func checkSHA1(user, hash string) error {
	b, err := base64.StdEncoding.DecodeString(hash[len("{SHA}"):])
	if err != nil || len(b) != sha1.Size {
		return fmt.Errorf("user %q: malformed {SHA} hash; create a bcrypt one with htpasswd -nbB", user)
	}
	return nil
}

// cryptBase64 reports whether s is in crypt's base64 alphabet.
func cryptBase64(s string) bool {
	for _, c := range s {
		if !(c == '.' || c == '/' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// MixedCosts describes hashes that do not all cost the same to check,
// one user per kind and cost ("alice bcrypt cost 4, bob bcrypt cost 12"),
// or "" when they all cost the same. names and hashes are parallel.
func MixedCosts(names []string, hashes []Hash) string {
	var seen []Hash
	var parts []string
	for i, h := range hashes {
		if slices.Contains(seen, h) {
			continue
		}
		seen = append(seen, h)
		if h.Kind == HashBcrypt {
			parts = append(parts, fmt.Sprintf("%s bcrypt cost %d", names[i], h.Cost))
		} else {
			parts = append(parts, names[i]+" "+h.Kind.String())
		}
	}
	if len(seen) < 2 {
		return ""
	}
	return strings.Join(parts, ", ")
}
