package client

import (
	"crypto/tls"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

func h2Server(t *testing.T, tlsOn, h2 bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tlsOn {
		srv.EnableHTTP2 = h2
		srv.StartTLS()
	} else {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		srv.Config.Protocols = &p
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// get sends GET to url through c and reports the body and whether the
// connection was reused.
func h2get(t *testing.T, c *Standard, url string) (string, bool, error) {
	t.Helper()
	var reused bool
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
	}))
	resp, err := c.RoundTripInformational(req, nil)
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), reused, err
}

// h2c and h2 speak HTTP/2 and reuse their connection.
func TestH2SpeaksHTTP2AndReuses(t *testing.T) {
	clear, secure := h2Server(t, false, true), h2Server(t, true, true)
	pool := secure.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	for name, c := range map[string]struct {
		tr  *Standard
		url string
	}{
		"h2c": {NewH2(H2Options{DialTimeout: 5 * time.Second, IdleConnTimeout: time.Minute}), clear.URL},
		"h2":  {NewH2(H2Options{TLS: &tls.Config{RootCAs: pool, ServerName: "example.com"}, DialTimeout: 5 * time.Second, IdleConnTimeout: time.Minute}), secure.URL},
	} {
		for i := range 2 {
			body, reused, err := h2get(t, c.tr, c.url)
			if err != nil || body != "HTTP/2.0" || reused != (i == 1) {
				t.Errorf("%s request %d: %q reused=%v %v, want HTTP/2.0 on one connection", name, i, body, reused, err)
			}
		}
		c.tr.CloseIdleConnections()
	}
}

// A TLS backend that does not select h2 is a *TLSError naming it; the
// request is never sent over HTTP/1.1.
func TestH2RefusesABackendWithoutH2(t *testing.T) {
	h1 := h2Server(t, true, false)
	pool := h1.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c := NewH2(H2Options{TLS: &tls.Config{RootCAs: pool, ServerName: "example.com"}, DialTimeout: 5 * time.Second})
	_, _, err := h2get(t, c, h1.URL)
	var te *TLSError
	if !errors.As(err, &te) || te.Reason != ReasonNoH2 || !strings.Contains(te.Error(), "example.com") {
		t.Fatalf("error %v, want a TLSError of reason %q naming the server name", err, ReasonNoH2)
	}
}
