package router

import (
	"crypto/tls"
	"errors"
	"fmt"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/certs/backendtls"
	"github.com/levee-proxy/levee/router/config"
)

// BackendTLS returns the client configuration of the route's backend
// connections: nil, nil for plain HTTP and h2c; an error when scheme=https or h2 but
// its settings could not be used, in which case the route must not talk
// to its backends at all (W005). Read only: shared by every request.
func (r *Route) BackendTLS() (*tls.Config, error) { return r.backendTLS, r.backendTLSErr }

// compileBackendTLS reads the route's backend TLS files once, when the
// route is built. Callers hold r.mu.
func compileBackendTLS(rt *Route) []diagnostics.Diagnostic {
	ep := &rt.ep
	if !config.SpeaksTLS(ep.Scheme) {
		return nil
	}
	bt := ep.BackendTLS
	for _, f := range []struct{ label, value string }{{"tls.serverName", bt.ServerName}, {"tls.ca", bt.CA}, {"tls.clientCert", bt.ClientCert}} {
		if f.value == config.InvalidBackendTLS {
			// Reported by the validator with the value given.
			rt.backendTLSErr = fmt.Errorf("%s has an invalid value", f.label)
			return nil
		}
	}
	opts := backendtls.Options{ServerName: bt.ServerName, CAFile: bt.CA, ClientCert: bt.ClientCert, InsecureSkipVerify: bt.InsecureSkipVerify}
	sig := backendtls.FilesSignature(opts)
	if rt.state != nil {
		if c := rt.state.backendTLS; c.cfg != nil && c.settings == bt && c.files == sig {
			// A rebuild (a backend added, say) with the same settings and
			// files: the same configuration, so the same connection pool
			// and session cache.
			rt.backendTLS = c.cfg
			return nil
		}
	}
	cfg, err := backendtls.Config(opts)
	if err != nil {
		rt.backendTLSErr = err
		key := "tls.ca"
		var be *backendtls.Error
		if errors.As(err, &be) {
			key = "tls." + be.Setting
		}
		return []diagnostics.Diagnostic{diagnostics.New(diagnostics.BadBackendTLS, sourceOf(*ep), key, "",
			"route answers 502 backend-tls-misconfigured", err.Error(), "")}
	}
	rt.backendTLS = cfg
	if rt.state != nil {
		rt.state.backendTLS = compiledBackendTLS{settings: bt, files: sig, cfg: cfg}
	}
	return nil
}

// compiledBackendTLS is a compiled backend TLS configuration with what
// it was compiled from.
type compiledBackendTLS struct {
	settings config.BackendTLS
	files    string
	cfg      *tls.Config
}

// BackendTLSDiagnostics reads the backend TLS files of the entrypoints
// with scheme=https or h2 as the router would, and returns what it would report
// (W005), for `levee validate`.
func BackendTLSDiagnostics(eps []config.Entrypoint) []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for i := range eps {
		out = append(out, compileBackendTLS(&Route{ep: eps[i]})...)
	}
	return out
}
