package main

import (
	"errors"
	"fmt"
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
		parts := strings.Split(item, ",")
		if len(parts) > 2 || strings.TrimSpace(parts[0]) == "" || (len(parts) == 2 && strings.TrimSpace(parts[1]) == "") {
			return fmt.Errorf("%q: want CERT[,KEY]: PEM files of a certificate chain and its key (KEY left out when CERT holds both)", item)
		}
		p := certs.FilePair{Cert: strings.TrimSpace(parts[0])}
		if len(parts) == 2 {
			p.Key = strings.TrimSpace(parts[1])
		}
		*f.files = append(*f.files, p)
	}
	return nil
}
