package basicauth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	htpasswd "github.com/tg123/go-htpasswd"
	"golang.org/x/crypto/bcrypt"

	"github.com/levee-proxy/levee/router/config"
)

// MaxUsersFile bounds a users file's size: a file is read whole when the
// route is built, under the router's lock, so a huge or endless one (a
// device, a FIFO) would stall every config change behind it.
const MaxUsersFile = 1 << 20

// matcher checks a password against one hash.
type matcher interface{ MatchesPassword(pass string) bool }

// bcryptHash is a bcrypt hash (golang.org/x/crypto/bcrypt).
type bcryptHash []byte

func (h bcryptHash) MatchesPassword(pass string) bool {
	return bcrypt.CompareHashAndPassword(h, []byte(pass)) == nil
}

type user struct {
	name    [32]byte // SHA-256 of the name: every comparison has one length
	hashStr string   // the configured hash, as the cache's value
	kind    config.Hash
	check   matcher
}

// weight orders hashes by what one check costs: {SHA} < apr1 < bcrypt by
// cost.
func weight(h config.Hash) int {
	switch h.Kind {
	case config.HashSHA1:
		return 0
	case config.HashAPR1:
		return 1
	}
	return h.Cost
}

// parseUser checks an htpasswd line and compiles its hash. apr1 and {SHA}
// are verified by github.com/tg123/go-htpasswd (constant-time comparison
// of the digests).
func parseUser(line string) (name string, u user, err error) {
	name, h, err := config.CheckHtpasswdLine(line)
	if err != nil {
		return name, user{}, err
	}
	hash := line[len(name)+1:]
	u = user{name: sha256.Sum256([]byte(name)), hashStr: hash, kind: h}
	switch h.Kind {
	case config.HashBcrypt:
		u.check = bcryptHash(hash)
	case config.HashAPR1:
		u.check, err = htpasswd.AcceptMd5(hash)
	case config.HashSHA1:
		u.check, err = htpasswd.AcceptSha(hash)
	}
	if err == nil && u.check == nil {
		err = fmt.Errorf("no verifier for a %s hash", h.Kind)
	}
	if err != nil {
		return name, user{}, fmt.Errorf("user %q: %w", name, err)
	}
	return name, u, nil
}

// The dummies: well-formed hashes that no password is expected to match.
// What they hash does not matter, only that checking one costs what
// checking a real one of the kind and cost does; a bcrypt dummy is a
// salt and digest under the wanted cost, so it costs nothing to make.
const (
	dummyAPR1   = "$apr1$levee000$IgXLP6ewTrSuBkTrqE8wj/"
	dummySHA1   = "{SHA}2jmj7l5rSw0yVb/vlWAYkK/YBwk="
	dummyBcrypt = "c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC" // 22 salt and 31 digest characters
)

// newDummy returns a hash of h's kind and cost.
func newDummy(h config.Hash) matcher {
	var m htpasswd.EncodedPasswd
	switch h.Kind {
	case config.HashAPR1:
		m, _ = htpasswd.AcceptMd5(dummyAPR1)
	case config.HashSHA1:
		m, _ = htpasswd.AcceptSha(dummySHA1)
	default:
		return bcryptHash(fmt.Sprintf("$2a$%02d$%s", max(h.Cost, bcrypt.MinCost), dummyBcrypt))
	}
	return m
}

// readUsersFile reads htpasswd lines, skipping blank lines and #
// comments. Only a regular file of at most MaxUsersFile bytes is read: it
// is opened without blocking (a FIFO would wait for a writer) and checked
// before any byte is read.
func readUsersFile(path string) ([]string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("users file %s is not a regular file (%s)", path, st.Mode().Type())
	}
	if st.Size() > MaxUsersFile {
		return nil, fmt.Errorf("users file %s has %d bytes, more than the %d allowed", path, st.Size(), MaxUsersFile)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxUsersFile+1))
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	if len(b) > MaxUsersFile {
		return nil, fmt.Errorf("users file %s grew past the %d bytes allowed while it was read", path, MaxUsersFile)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, MaxUsersFile+1)
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
