package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/certs/certfile"
)

// pair is one usable static certificate and its key.
type pair struct {
	file  string // the certificate's file
	cert  *tls.Certificate
	names []string // valid DNS names, lower-case; "*.x" for wildcards
}

// staticSet indexes pairs by name. Immutable once stored.
type staticSet struct {
	pairs    []*pair
	exact    map[string]*pair
	wildcard map[string]*pair // keyed by the suffix after "*."
}

// lookup returns the pair for name: exact, else the wildcard one label up.
func (s *staticSet) lookup(name string) *pair {
	if name == "" {
		return nil
	}
	if p := s.exact[name]; p != nil {
		return p
	}
	if i := strings.IndexByte(name, '.'); i > 0 {
		return s.wildcard[name[i+1:]]
	}
	return nil
}

// servedBy returns the pair that serves the certificate name n ("*.x"
// for a wildcard).
func (s *staticSet) servedBy(n string) *pair {
	if suffix, ok := strings.CutPrefix(n, "*."); ok {
		return s.wildcard[suffix]
	}
	return s.exact[n]
}

func (s *staticSet) add(p *pair) {
	for _, n := range p.names {
		m, key := s.exact, n
		if suffix, ok := strings.CutPrefix(n, "*."); ok {
			m, key = s.wildcard, suffix
		}
		// Two pairs for one name: the one valid longest wins.
		if old := m[key]; old == nil || p.cert.Leaf.NotAfter.After(old.cert.Leaf.NotAfter) {
			m[key] = p
		}
	}
	s.pairs = append(s.pairs, p)
}

// certExts and keyExt are the file names the directory is read by.
var certExts = []string{".crt", ".pem", ".cert"}

const keyExt = ".key"

// loadDir loads every pair of dir. Problems are W043, one per file.
func loadDir(dir string, now time.Time) (*staticSet, []diagnostics.Diagnostic) {
	set := &staticSet{exact: map[string]*pair{}, wildcard: map[string]*pair{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return set, []diagnostics.Diagnostic{certDiag(dir, fmt.Sprintf("cannot read the certificate directory: %v", err), "check --tls-cert-dir and its permissions")}
	}
	certs, keys := map[string]string{}, map[string]string{}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		ext := strings.ToLower(filepath.Ext(e.Name()))
		base := strings.TrimSuffix(e.Name(), filepath.Ext(e.Name()))
		switch {
		case slices.Contains(certExts, ext):
			certs[base] = filepath.Join(dir, e.Name())
		case ext == keyExt:
			keys[base] = filepath.Join(dir, e.Name())
		}
	}
	var diags []diagnostics.Diagnostic
	for _, base := range sortedKeys(certs) {
		certFile, keyFile := certs[base], keys[base]
		if keyFile == "" {
			keyFile = certFile // a .pem may hold both
		}
		p, err := loadPair(certFile, keyFile, filepath.Join(dir, base+keyExt)+" beside it", now)
		if err != nil {
			diags = append(diags, certDiag(certFile, err.Error(), "give each certificate its key in "+base+keyExt+" (or in the same .pem)"))
			continue
		}
		set.add(p)
	}
	for _, base := range sortedKeys(keys) {
		if _, ok := certs[base]; !ok {
			diags = append(diags, certDiag(keys[base], "a key without a certificate: want "+base+".crt or "+base+".pem beside it", ""))
		}
	}
	return set, diags
}

// loadFiles adds the pairs of --tls-cert to set. Problems are W043, one
// per pair.
func loadFiles(set *staticSet, files []FilePair, now time.Time) []diagnostics.Diagnostic {
	var diags []diagnostics.Diagnostic
	for _, f := range files {
		key := f.Key
		if key == "" {
			key = f.Cert // one .pem with both
		}
		p, err := loadPair(f.Cert, key, "--tls-cert "+f.Cert+",KEY", now)
		if err != nil {
			diags = append(diags, fileDiag("--tls-cert", f.Cert, err.Error(), "give --tls-cert CERT,KEY: a PEM chain and its matching key (or one PEM file holding both), readable by Levee, not expired"))
			continue
		}
		set.add(p)
	}
	return diags
}

// loadPair reads and checks one certificate chain and its key. When
// keyFile is certFile, the key must be in the same PEM file; wantKey says
// where else it should have been, for the error.
func loadPair(certFile, keyFile, wantKey string, now time.Time) (*pair, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading certificate %s: %w", certFile, err)
	}
	keyPEM := certPEM
	if keyFile != certFile {
		if keyPEM, err = os.ReadFile(keyFile); err != nil {
			return nil, fmt.Errorf("reading key %s: %w", keyFile, err)
		}
	} else if !hasPEMKey(certPEM) {
		return nil, fmt.Errorf("certificate %s has no key: want %s", certFile, wantKey)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certificate %s with key %s: %w", certFile, keyFile, err)
	}
	leaf := c.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", certFile, err)
		}
		c.Leaf = leaf
	}
	switch {
	case now.After(leaf.NotAfter):
		return nil, fmt.Errorf("certificate %s expired on %s", certFile, leaf.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(leaf.NotBefore):
		return nil, fmt.Errorf("certificate %s is not valid before %s", certFile, leaf.NotBefore.UTC().Format(time.RFC3339))
	}
	names := certNames(leaf)
	if len(names) == 0 {
		return nil, fmt.Errorf("certificate %s names no valid DNS name (subject alternative names %q)", certFile, leaf.DNSNames)
	}
	return &pair{file: certFile, cert: &c, names: names}, nil
}

// certNames are the valid DNS names of a certificate: its DNS subject
// alternative names, or its common name when it has none (legacy
// certificates; RFC 6125 6.4.4).
func certNames(leaf *x509.Certificate) []string {
	raw := leaf.DNSNames
	if len(raw) == 0 && leaf.Subject.CommonName != "" {
		raw = []string{leaf.Subject.CommonName}
	}
	var out []string
	for _, n := range raw {
		n = normalizeName(n)
		if validName(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// validName is a DNS name, possibly "*." and a name of two labels or more.
func validName(n string) bool {
	rest, wild := strings.CutPrefix(n, "*.")
	if wild && !strings.Contains(rest, ".") {
		return false // "*.com": no CA issues it, no client accepts it
	}
	if len(rest) == 0 || len(rest) > 253 {
		return false
	}
	for _, label := range strings.Split(rest, ".") {
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func hasPEMKey(b []byte) bool { return certfile.HasPEMKey(b) }

// dirSignature summarises dir's files (names, sizes, modification times):
// a change in any is a reload. A link is described by the file it leads
// to, since that is what changes when a certificate renewed elsewhere is
// linked in (certbot re-points /etc/letsencrypt/live/... at each renewal;
// the link in dir stays the same); the link itself too, so that pointing
// it elsewhere is a change as well. A dangling link is described as such
// (loadDir reports it as W043).
func dirSignature(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if errors.Is(err, os.ErrNotExist) {
			continue // removed meanwhile
		}
		if err != nil {
			return "", err
		}
		b.WriteString(e.Name())
		certfile.Describe(&b, info)
		if info.Mode()&os.ModeSymlink != 0 {
			b.WriteString(" ->")
			certfile.DescribeTarget(&b, filepath.Join(dir, e.Name()))
		}
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// filesSignature summarises the files of --tls-cert as dirSignature does
// a directory's (following links; a missing file is described as such).
func filesSignature(files []FilePair) string { return certfile.Signature(files) }

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
