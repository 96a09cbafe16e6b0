package api

import (
	"net/http"

	"github.com/levee-proxy/levee/router/status"
)

type certificateList struct {
	Certificates []status.CertificateStatus `json:"certificates"`
}

// listCertificates is GET /certificates.
func (s *Server) listCertificates(w http.ResponseWriter, r *http.Request, _ string) {
	var list []status.CertificateStatus
	if s.certs != nil {
		list = s.certs()
	}
	if list == nil {
		list = []status.CertificateStatus{}
	}
	writeJSON(w, http.StatusOK, certificateList{Certificates: list})
}
