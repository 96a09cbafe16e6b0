package dnsprovider

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/caddyserver/certmagic"
	"github.com/libdns/rfc2136"
)

// tsigAlgorithms are the TSIG algorithms of RFC 8945 6 that an update can
// be signed with (hmac-md5 is not offered: RFC 8945 6 deprecates it).
var tsigAlgorithms = []string{"hmac-sha1", "hmac-sha224", "hmac-sha256", "hmac-sha384", "hmac-sha512"}

// newRFC2136: LEVEE_RFC2136_SERVER, _KEY_NAME, _KEY_ALG and _KEY (package
// doc).
func newRFC2136(_ context.Context, env Env) (certmagic.DNSProvider, error) {
	server, err := env.required("LEVEE_RFC2136_SERVER")
	if err != nil {
		return nil, err
	}
	if server, err = serverAddr(server); err != nil {
		return nil, fmt.Errorf("LEVEE_RFC2136_SERVER: %w", err)
	}
	key, err := rfc2136Key(env)
	if err != nil {
		return nil, err
	}
	return &rfc2136.Provider{Server: server, KeyName: key.name, KeyAlg: key.alg, Key: key.secret}, nil
}

// serverAddr is host[:port] with the port (53 if not given).
func serverAddr(s string) (string, error) {
	bad := fmt.Errorf("%q: want host[:port]", s)
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		if strings.Count(s, ":") == 1 {
			return "", bad
		}
		host, port = strings.Trim(s, "[]"), "53"
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || host == "" || strings.ContainsAny(host, "/ []") {
		return "", bad
	}
	return net.JoinHostPort(host, port), nil
}

// tsigKey is a TSIG key: its name, algorithm and base64 secret.
type tsigKey struct{ name, alg, secret string }

// rfc2136Key reads the key from its variables, or from the key clause in
// LEVEE_RFC2136_KEY_FILE; a variable set beside a clause wins.
func rfc2136Key(env Env) (tsigKey, error) {
	raw, err := env.required("LEVEE_RFC2136_KEY")
	if err != nil {
		return tsigKey{}, err
	}
	k := tsigKey{secret: raw}
	if clause, ok := parseKeyClause(raw); ok {
		k = clause
	}
	if v := env.Getenv("LEVEE_RFC2136_KEY_NAME"); v != "" {
		k.name = v
	}
	if v := env.Getenv("LEVEE_RFC2136_KEY_ALG"); v != "" {
		k.alg = v
	}
	if k.name == "" {
		return tsigKey{}, fmt.Errorf("LEVEE_RFC2136_KEY_NAME (the TSIG key's name, as the server knows it): %w", errMissing)
	}
	if k.alg == "" {
		k.alg = "hmac-sha256"
	}
	k.alg = strings.TrimSuffix(strings.ToLower(k.alg), ".")
	if !slices.Contains(tsigAlgorithms, k.alg) {
		return tsigKey{}, fmt.Errorf("LEVEE_RFC2136_KEY_ALG %q: want one of %s", k.alg, strings.Join(tsigAlgorithms, ", "))
	}
	if _, err := base64.StdEncoding.DecodeString(k.secret); err != nil {
		return tsigKey{}, fmt.Errorf("LEVEE_RFC2136_KEY: the TSIG secret is not base64: %w", err)
	}
	return k, nil
}

var (
	keyClause   = regexp.MustCompile(`(?s)^key\s+"?([^"\s{]+)"?\s*\{(.*)\}\s*;?$`)
	keyAlgStmt  = regexp.MustCompile(`algorithm\s+"?([A-Za-z0-9.-]+)"?\s*;`)
	keySecretSt = regexp.MustCompile(`secret\s+"([^"]+)"\s*;`)
)

// parseKeyClause reads a key clause of BIND's configuration, as
// tsig-keygen prints it: key "name" { algorithm hmac-sha256; secret "…"; };
func parseKeyClause(s string) (tsigKey, bool) {
	m := keyClause.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return tsigKey{}, false
	}
	k := tsigKey{name: m[1]}
	if a := keyAlgStmt.FindStringSubmatch(m[2]); a != nil {
		k.alg = a[1]
	}
	if sec := keySecretSt.FindStringSubmatch(m[2]); sec != nil {
		k.secret = sec[1]
	}
	return k, true
}
