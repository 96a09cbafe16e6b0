// Package traefikacme moves the certificates Traefik obtained over ACME
// (its acme.json) into Levee's ACME storage (--cert-dir), so that a
// migration serves them at once and renews them when they are due,
// instead of ordering every certificate again on the first start (and
// meeting the CA's rate limits).
//
// The model: Traefik (v2 and v3) keeps one JSON object per certificate
// resolver, each with its ACME account and its certificates; a
// certificate is its domain (main and SANs) and the base64 of its PEM
// chain and PEM key. Read parses the file and checks each pair (the key
// matches, the chain parses); a pair that does not is reported and left
// out, never written. Import writes each certificate into certmagic's
// storage under the issuer of the CA Levee is to use (the storage is
// keyed by the CA's directory URL) once for each DNS name it covers,
// since Levee manages each host on its own. A name that already has a
// certificate in the storage is left as it is. The ACME account is not
// imported: Levee registers its own.
package traefikacme

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	"github.com/caddyserver/certmagic"
)

// Certificate is one certificate of acme.json.
type Certificate struct {
	// Resolver is the certificate resolver that holds it.
	Resolver string
	// Names are the DNS names of the leaf certificate, lower-case.
	Names []string
	// ChainPEM and KeyPEM are the PEM chain and key.
	ChainPEM, KeyPEM []byte
	Leaf             *x509.Certificate
}

// resolverJSON is one resolver of Traefik's acme.json (v2, v3).
type resolverJSON struct {
	Certificates []struct {
		Domain struct {
			Main string   `json:"main"`
			SANs []string `json:"sans"`
		} `json:"domain"`
		Certificate string `json:"certificate"`
		Key         string `json:"key"`
	} `json:"Certificates"`
}

// Read parses acme.json: the certificates that can be used, and one
// error per certificate that cannot (naming its resolver and domain). A
// file that is not acme.json is an error.
func Read(r io.Reader) ([]Certificate, []error, error) {
	var file map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&file); err != nil {
		return nil, nil, fmt.Errorf("not Traefik's acme.json: %w", err)
	}
	resolvers := make([]string, 0, len(file))
	for name := range file {
		resolvers = append(resolvers, name)
	}
	slices.Sort(resolvers)
	var out []Certificate
	var problems []error
	for _, name := range resolvers {
		var res resolverJSON
		if err := json.Unmarshal(file[name], &res); err != nil {
			return nil, nil, fmt.Errorf("resolver %q: not a Traefik certificate resolver (Traefik v1's file is not read): %w", name, err)
		}
		for i, c := range res.Certificates {
			cert, err := pair(name, c.Certificate, c.Key)
			if err != nil {
				problems = append(problems, fmt.Errorf("resolver %q, certificate %d (%s): %w", name, i, c.Domain.Main, err))
				continue
			}
			out = append(out, cert)
		}
	}
	return out, problems, nil
}

// pair decodes and checks one certificate and its key.
func pair(resolver, chainB64, keyB64 string) (Certificate, error) {
	chain, err := base64.StdEncoding.DecodeString(chainB64)
	if err != nil {
		return Certificate{}, fmt.Errorf("certificate is not base64: %w", err)
	}
	key, err := base64.StdEncoding.DecodeString(keyB64)
	if err != nil {
		return Certificate{}, fmt.Errorf("key is not base64: %w", err)
	}
	tc, err := tls.X509KeyPair(chain, key)
	if err != nil {
		return Certificate{}, fmt.Errorf("certificate and key: %w", err)
	}
	leaf := tc.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(tc.Certificate[0]); err != nil {
			return Certificate{}, err
		}
	}
	var names []string
	for _, n := range leaf.DNSNames {
		if n = strings.ToLower(strings.TrimSuffix(n, ".")); n != "" && !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return Certificate{}, errors.New("the certificate names no DNS name")
	}
	return Certificate{Resolver: resolver, Names: names, ChainPEM: chain, KeyPEM: key, Leaf: leaf}, nil
}

// Result says what Import did with one name.
type Result struct {
	Name     string
	Imported bool // false: the storage already had a certificate for it
}

// Import writes certs into storage under the issuer of the ACME
// directory ca ("" is Let's Encrypt's, as --acme-ca), one copy per name.
func Import(ctx context.Context, storage certmagic.Storage, ca string, certs []Certificate) ([]Result, error) {
	if ca == "" {
		ca = certmagic.LetsEncryptProductionCA
	}
	issuerKey := (&certmagic.ACMEIssuer{CA: ca}).IssuerKey()
	var out []Result
	for _, c := range certs {
		meta, err := json.MarshalIndent(certmagic.CertificateResource{SANs: c.Names}, "", "\t")
		if err != nil {
			return out, err
		}
		for _, name := range c.Names {
			certKey := certmagic.StorageKeys.SiteCert(issuerKey, name)
			if _, err := storage.Stat(ctx, certKey); err == nil {
				out = append(out, Result{Name: name})
				continue
			} else if !errors.Is(err, fs.ErrNotExist) {
				return out, fmt.Errorf("%s: %w", certKey, err)
			}
			// The key and metadata before the certificate: certmagic
			// looks for the certificate first.
			for _, kv := range []struct {
				key   string
				value []byte
			}{
				{certmagic.StorageKeys.SitePrivateKey(issuerKey, name), c.KeyPEM},
				{certmagic.StorageKeys.SiteMeta(issuerKey, name), meta},
				{certKey, c.ChainPEM},
			} {
				if err := storage.Store(ctx, kv.key, kv.value); err != nil {
					return out, fmt.Errorf("writing %s: %w", kv.key, err)
				}
			}
			out = append(out, Result{Name: name, Imported: true})
		}
	}
	return out, nil
}
