package proxy

import (
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/levee-proxy/levee/router/httpx/tokens"
)

// errUnaskedUpgrade: the backend answered 101 to a request that did not ask
// to switch to the protocol it named. Tunnelling it would let anything
// through unchecked; httputil.ReverseProxy refuses it the same way.
var errUnaskedUpgrade = errors.New("backend switched protocols without being asked to")

// allowedUpgrade returns the protocols of the request's Upgrade header
// that Options.UpgradeProtocols allows (RFC 9110 7.8), or "" when the
// request is not an upgrade or asks for none of them; such a request is
// sent as a plain one (a server may ignore Upgrade).
func (p *Handler) allowedUpgrade(req *http.Request) string {
	if !isUpgrade(req) {
		return ""
	}
	var keep []string
	for _, v := range req.Header["Upgrade"] {
		for v != "" {
			var tok string
			tok, v = tokens.Next(v)
			name, _, _ := strings.Cut(tok, "/") // protocol/version
			if slices.Contains(p.opts.UpgradeProtocols, strings.ToLower(name)) {
				keep = append(keep, tok)
			}
		}
	}
	return strings.Join(keep, ", ")
}

// upgradeAccepted reports whether a 101 answers the upgrade the client
// asked for: one protocol, one of those requested.
func (x *exchange) upgradeAccepted(resp *http.Response) bool {
	if x.upgrade == "" {
		return false
	}
	got := strings.TrimSpace(resp.Header.Get("Upgrade"))
	if got == "" || strings.Contains(got, ",") {
		return false
	}
	return httpguts.HeaderValuesContainsToken([]string{x.upgrade}, got)
}

func isUpgrade(req *http.Request) bool {
	if _, ok := req.Header["Upgrade"]; !ok {
		return false
	}
	return httpguts.HeaderValuesContainsToken(req.Header["Connection"], "upgrade")
}

// Informational passes a backend's interim answer (103 Early Hints, for
// one) on to the client, as httputil.ReverseProxy does.
func (x *exchange) Informational(code int, h http.Header) {
	removeHopByHop(h)
	wh := x.w.Header()
	for k, vv := range h {
		wh[k] = vv
	}
	x.armWrite()
	x.w.WriteHeader(code)
	// The header map is the final response's: the interim fields do not
	// belong to it.
	clear(wh)
}

// switchProtocols completes an Upgrade (WebSocket): it sends the backend's
// 101 to the client and copies bytes both ways until either side closes or
// no byte moves for Options.TunnelIdleTimeout.
func (x *exchange) switchProtocols(resp *http.Response) {
	backConn, ok := resp.Body.(io.ReadWriteCloser)
	if !ok {
		_ = resp.Body.Close()
		x.reply(http.StatusBadGateway, DiagnosticBackendUnreachable, "backend switched protocols without a connection\n")
		return
	}
	defer backConn.Close()
	conn, brw, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		x.reply(http.StatusInternalServerError, DiagnosticBackendUnreachable, "cannot switch protocols on this connection\n")
		return
	}
	x.hijacked = true
	defer conn.Close()
	// The body and write limits of the request end here; the tunnel has
	// its own.
	_ = conn.SetDeadline(time.Time{})
	x.status = http.StatusSwitchingProtocols
	x.headersAt = time.Since(x.start)
	resp.Body = nil
	upgrade := resp.Header.Get("Upgrade")
	removeHopByHop(resp.Header)
	resp.Header["Connection"] = valueUpgrade
	resp.Header["Upgrade"] = []string{upgrade}
	_ = conn.SetWriteDeadline(time.Now().Add(x.p.opts.ResponseWriteTimeout))
	if err := resp.Write(brw); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	_ = conn.SetWriteDeadline(time.Time{})
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	stop := make(chan struct{})
	defer close(stop)
	go tunnelIdle(x.p.opts.TunnelIdleTimeout, &last, stop, func() {
		_ = conn.Close()
		_ = backConn.Close()
	})
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(activeWriter{backConn, &last}, brw) // brw first yields what the client already sent
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(activeWriter{conn, &last}, backConn)
		done <- struct{}{}
	}()
	<-done
	// Closing both ends (deferred) unblocks the other copy.
}
