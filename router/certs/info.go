package certs

import (
	"crypto/tls"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/router/status"
)

// StatusReporter is what an Issuer may also offer: the status of the
// certificates it manages.
type StatusReporter interface {
	Certificates() []status.CertificateStatus
}

// CertInfo is status.CertificateStatus without a host.
type CertInfo = status.CertificateStatus

func infoOf(c *tls.Certificate, source string) CertInfo {
	info := CertInfo{Source: source}
	if c != nil && c.Leaf != nil {
		info.NotAfter = c.Leaf.NotAfter.UTC()
		info.Issuer = c.Leaf.Issuer.CommonName
		if info.Issuer == "" && len(c.Leaf.Issuer.Organization) > 0 {
			info.Issuer = c.Leaf.Issuer.Organization[0]
		}
	}
	return info
}

// Certificates lists the certificates served, by host: static ones (each
// name of each pair that serves it), the issuer's, and the default one as
// host "*". Sorted by host, then source.
func (s *Store) Certificates() []status.CertificateStatus {
	var out []status.CertificateStatus
	set := s.static.Load()
	for _, p := range set.pairs {
		for _, n := range p.names {
			if set.servedBy(n) != p {
				continue // another pair serves this name
			}
			info := infoOf(p.cert, SourceStatic)
			info.Host, info.File = n, p.file
			out = append(out, info)
		}
	}
	if b := s.issuer.Load(); b != nil {
		if r, ok := b.Issuer.(StatusReporter); ok {
			out = append(out, r.Certificates()...)
		}
	}
	def := s.defInfo
	def.Host = "*"
	out = append(out, def)
	slices.SortStableFunc(out, func(a, b status.CertificateStatus) int {
		if c := strings.Compare(a.Host, b.Host); c != 0 {
			return c
		}
		return strings.Compare(a.Source, b.Source)
	})
	return out
}
