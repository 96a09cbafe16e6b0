// Package errorpages replaces a route's error answers with pages another
// route serves (errors.*, Traefik's errors middleware).
//
// # The model
//
// When the answer the route's exchange gives (its backend's, or Levee's
// own 502, 503 or 504) has a status of the policy's list, its head and
// body are held back, never sent. Once the exchange is over, the page is
// asked of the pages route: a GET of the query, {status} replaced by the
// code, through that route's breaker and balancer. A 2xx page is sent
// with the original status (and the original's Retry-After,
// WWW-Authenticate, Allow and diagnostic headers, which give the status
// its meaning); anything else (no such route, an error, a timeout, a
// non-2xx page, a page over MaxPageBytes) sends the original answer as
// it was, its body replayed from what was held (up to MaxHeldBytes).
// With errors.file the page is the file, read when the route is built
// and again when it changes (looked at once a second at most), and
// always sent. An answer not in the list, an informational (1xx) head and an upgrade
// pass straight through: once a head went out, the answer streams.
package errorpages

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// Name is the policy's name in metrics and logs.
const Name = "errors"

// The policy's bounds.
const (
	// MaxPageBytes is the largest page sent; a bigger one fails.
	MaxPageBytes = 1 << 20
	// MaxHeldBytes is how much of the original body is held to be
	// replayed when the page fails; past it the replay has no body.
	MaxHeldBytes = 64 << 10
)

// Policy is one route's compiled error pages: asked of route, or the
// page read from a file.
type Policy struct {
	statuses breaker.StatusSet
	route    string
	query    string
	timeout  time.Duration
	file     *pageFile
}

// New compiles c; nil when the validator refused it. An errors.file is
// read here, and again when it changes (pageFile; now tells the time,
// nil: time.Now): an error is the file's (ErrPageTooLarge or why it
// cannot be read), and the route then has no error pages.
func New(c *config.ErrorPages, pagesDir string, now func() time.Time) (*Policy, error) {
	if c == nil || (c.Route == "") == (c.File == "") {
		return nil, nil
	}
	set, err := config.ParseErrorStatuses(c.Status)
	if err != nil || config.CheckErrorQuery(c.Query) != nil {
		return nil, nil
	}
	if c.File != "" {
		if now == nil {
			now = time.Now
		}
		f, err := openPageFile(c.File, pagesDir, now)
		if err != nil {
			return nil, err
		}
		return &Policy{statuses: set, file: f}, nil
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = config.DefaultErrorTimeout
	}
	return &Policy{statuses: set, route: c.Route, query: c.Query, timeout: timeout}, nil
}

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// Stage implements policy.Policy: after the rewrites, so that the page
// replaces what the backend answered to the rewritten request, and
// before compression, which then compresses the page.
func (p *Policy) Stage() policy.Stage { return policy.StageErrors }

// References implements policy.Referrer.
func (p *Policy) References() []policy.Reference {
	if p.route == "" {
		return nil
	}
	return []policy.Reference{{Key: "errors.route", Route: p.route, Code: diagnostics.ErrorServiceUnknown, Fallback: "the original answers"}}
}

// Serve implements policy.Policy.
func (p *Policy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	// A file's page never fails, so the original body is never replayed
	// and never held.
	c := &catcher{ResponseWriter: w, statuses: p.statuses, base: w.Header().Clone(), discard: p.file != nil}
	// The exchange replaces the forwarding fields with its own; the page
	// request starts from the client's, so that its exchange does not
	// append the client's address twice.
	var fwd [len(forwarding)][]string
	for i, k := range forwarding {
		fwd[i] = r.Header[k]
	}
	next.ServeHTTP(c, r)
	if c.caught == nil {
		return
	}
	if p.file != nil {
		page := p.file.current()
		sendPage(w, r, c.caught, http.Header{"Content-Type": {page.ContentType}}, page.Body)
		return
	}
	for i, k := range forwarding {
		if fwd[i] == nil {
			delete(r.Header, k)
		} else {
			r.Header[k] = fwd[i]
		}
	}
	if !p.servePage(w, r, c.caught) {
		c.caught.replay(w)
	}
}

// servePage asks for the page and, when it is a 2xx, sends it with the
// original status.
func (p *Policy) servePage(w http.ResponseWriter, r *http.Request, orig *held) bool {
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	pr := pageRequest(ctx, r, strings.ReplaceAll(p.query, config.ErrorStatusPlaceholder, strconv.Itoa(orig.status)))
	page := &pageWriter{header: http.Header{}}
	if !policy.ServeRoute(w, page, pr, p.route) || ctx.Err() != nil || page.over ||
		page.status < 200 || page.status > 299 {
		return false
	}
	sendPage(w, r, orig, page.header, page.body)
	return true
}

// sendPage sends body, described by the pageHeaders of header, with the
// original answer's status and the fields that give it its meaning.
func sendPage(w http.ResponseWriter, r *http.Request, orig *held, header http.Header, body []byte) {
	h := w.Header()
	clear(h)
	for k, v := range orig.base {
		h[k] = v
	}
	for _, k := range keptHeaders {
		if v, ok := orig.header[k]; ok {
			h[k] = v
		}
	}
	for _, k := range pageHeaders {
		if v, ok := header[k]; ok {
			h[k] = v
		}
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(orig.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	// The page is whole: send it now, before a broken original answer
	// ends the client's connection.
	_ = http.NewResponseController(w).Flush()
}

// forwarding are the fields each exchange sets from the client's.
var forwarding = [...]string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host"}

// keptHeaders are the original answer's fields that give its status its
// meaning: a 401 needs its challenge (RFC 9110 11.6.1), a 405 its Allow
// (15.5.6), a 503 or 429 its Retry-After (10.2.3).
var keptHeaders = []string{"Www-Authenticate", "Proxy-Authenticate", "Allow", "Retry-After", policy.HeaderDiagnostic}

// pageHeaders are the page's fields that describe its body.
var pageHeaders = []string{"Content-Type", "Content-Language", "Cache-Control", "Expires", "Last-Modified", "X-Content-Type-Options"}

// pageDropped are the client's fields the page request never carries: a
// body's framing, a range or a condition, whose answers (206, 304) are
// not pages, and the credentials (RFC 9110 11.6.2, 11.7.2; RFC 6265
// 5.4), which were given to the original route, not to the pages route.
var pageDropped = []string{
	"Content-Length", "Content-Type", "Transfer-Encoding", "Expect",
	"Range", "If-Range", "If-Match", "If-None-Match", "If-Modified-Since", "If-Unmodified-Since",
	"Authorization", "Proxy-Authorization", "Cookie",
}

// pageRequest is the GET of the page: the client's request as far as it
// says who asks (host, client address, TLS, the non-conditional fields),
// without a body and without the fields of pageDropped.
func pageRequest(ctx context.Context, r *http.Request, path string) *http.Request {
	pr := r.Clone(ctx)
	pr.Method = http.MethodGet
	pr.URL.Path, pr.URL.RawPath, pr.URL.RawQuery = path, "", ""
	pr.RequestURI = path
	pr.Body, pr.ContentLength, pr.GetBody = http.NoBody, 0, nil
	pr.TransferEncoding = nil
	for _, k := range pageDropped {
		delete(pr.Header, k)
	}
	return pr
}
