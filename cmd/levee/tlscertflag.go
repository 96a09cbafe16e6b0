package main

import (
	"errors"
	"strings"

	"github.com/levee-proxy/levee/router/certs"
)

// tlsCertFlag is the repeatable --tls-cert CERT[,KEY] flag: one static
// certificate by its files, whatever their names (certbot's fullchain.pem
// and privkey.pem), KEY left out when CERT holds both. Its environment
// form LEVEE_TLS_CERT holds several, separated by ';' (a comma belongs to
// one item, as in LEVEE_LISTEN).
type tlsCertFlag struct{ files *[]certs.FilePair }

func (f tlsCertFlag) String() string {
	if f.files == nil {
		return ""
	}
	var items []string
	for _, p := range *f.files {
		item := p.Cert
		if p.Key != "" {
			item += "," + p.Key
		}
		items = append(items, item)
	}
	return strings.Join(items, ";")
}

func (f tlsCertFlag) Set(v string) error {
	if strings.TrimSpace(v) == "" {
		return errors.New("want CERT[,KEY]: PEM files of a certificate chain and its key")
	}
	for _, item := range strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == '\n' }) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue // "a.pem; ;b.pem"
		}
		p, err := certs.ParseFilePair(item)
		if err != nil {
			return err
		}
		*f.files = append(*f.files, p)
	}
	return nil
}
