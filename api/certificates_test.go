package api

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/levee-proxy/levee/router/status"
)

func TestListCertificates(t *testing.T) {
	h := newHarness(t)
	rec := h.do("GET", "/certificates", "", "")
	if rec.Code != 200 || rec.Body.String() != "{\"certificates\":[]}\n" {
		t.Fatalf("without TLS: %d %s", rec.Code, rec.Body)
	}
	notAfter := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	h = newHarness(t, func(o *Options) {
		o.Certificates = func() []status.CertificateStatus {
			return []status.CertificateStatus{
				{Host: "*", Source: "default", Issuer: "Levee default certificate", NotAfter: notAfter},
				{Host: "shop.example.com", Source: "acme", Issuer: "Pebble Intermediate CA", NotAfter: notAfter,
					LastError: "urn:ietf:params:acme:error:connection", NextRenewal: notAfter.Add(-720 * time.Hour)},
			}
		}
	})
	rec = h.do("GET", "/certificates", "", "")
	var got struct {
		Certificates []map[string]any `json:"certificates"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 || len(got.Certificates) != 2 {
		t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
	}
	acme := got.Certificates[1]
	if acme["host"] != "shop.example.com" || acme["source"] != "acme" || acme["not_after"] != "2027-01-01T00:00:00Z" ||
		acme["last_error"] == nil || acme["next_renewal"] != "2026-12-02T00:00:00Z" {
		t.Errorf("acme entry %v", acme)
	}
	if _, ok := got.Certificates[0]["next_renewal"]; ok {
		t.Errorf("default entry has a next renewal: %v", got.Certificates[0])
	}
}
