package config

import (
	"fmt"
	"net/textproto"
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/net/http/httpguts"
)

// The setters of the transform policies (fields_transform.go) and their
// cross-field rules (finishTransform).

// transformDraft is what the transform setters keep beside the entrypoint
// until finish: which groups were given and whether they were turned off.
type transformDraft struct {
	compressSet     bool
	compressEnabled *bool
	stickySet       bool
	stickyEnabled   *bool
	corsCredentials givenValue // the allowCredentials key and value, for W061
	sts             givenValue // the key that set Strict-Transport-Security, for W084
	// seen holds the labels of the fields given, valid or not, so that a
	// half-given pair is reported once: by its bad half, or as incomplete.
	seen map[string]bool
}

func (d *draft) seeTransform(f *Field) {
	if d.tr.seen == nil {
		d.tr.seen = map[string]bool{}
	}
	d.tr.seen[f.Label] = true
}

// reservedHeaders cannot be set or removed by the headers policy: the
// hop-by-hop headers of RFC 9110 7.6.1 (and the Proxy-* and Keep-Alive of
// RFC 2616 13.5.1 that servers still send) describe one connection, Host
// names the route the request matched, and Content-Length the framing,
// which Levee owns.
var reservedHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true, "Proxy-Authorization": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true,
	"Host": true, "Content-Length": true,
}

// ReservedHeader reports whether the headers policy leaves name alone.
func ReservedHeader(name string) bool {
	return reservedHeaders[textproto.CanonicalMIMEHeaderKey(name)]
}

func (t *Transform) headers() *Headers {
	if t.Headers == nil {
		t.Headers = &Headers{}
	}
	return t.Headers
}

func (t *Transform) cors() *CORS {
	if t.CORS == nil {
		t.CORS = &CORS{}
	}
	return t.CORS
}

func (t *Transform) compress() *Compress {
	if t.Compress == nil {
		t.Compress = &Compress{MinResponseBodyBytes: DefaultMinResponseBodyBytes}
	}
	return t.Compress
}

func (t *Transform) redirectScheme() *RedirectScheme {
	if t.RedirectScheme == nil {
		t.RedirectScheme = &RedirectScheme{Scheme: "https"}
	}
	return t.RedirectScheme
}

func (t *Transform) redirectRegex() *RedirectRegex {
	if t.RedirectRegex == nil {
		t.RedirectRegex = &RedirectRegex{}
	}
	return t.RedirectRegex
}

func (t *Transform) replacePathRegex() *ReplacePathRegex {
	if t.ReplacePathRegex == nil {
		t.ReplacePathRegex = &ReplacePathRegex{}
	}
	return t.ReplacePathRegex
}

func (t *Transform) sticky() *Sticky {
	if t.Sticky == nil {
		t.Sticky = &Sticky{CookieName: DefaultStickyCookie}
	}
	return t.Sticky
}

func setCompressEnabled(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.tr.compressEnabled = &b
	}
}

// encodingNames maps the accepted names to the Content-Encoding tokens
// (RFC 9110 8.4.1, RFC 7932, RFC 8878).
var encodingNames = map[string]string{"zstd": EncodingZstd, "br": EncodingBrotli, "brotli": EncodingBrotli, "gzip": EncodingGzip, "x-gzip": EncodingGzip}

func setCompressEncodings(d *draft, f *Field, key string, v any) {
	d.tr.compressSet = true
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	encs := normalizeList(items, func(e string) (string, bool) {
		n, ok := encodingNames[strings.ToLower(e)]
		return n, ok
	}, func(e string) {
		d.add(f.Code, key, e, "dropped", fmt.Sprintf("unknown encoding %q: want zstd, br or gzip", e), "")
	})
	d.ep.Transform.compress().Encodings = encs
}

func setCompressMin(d *draft, f *Field, key string, v any) {
	d.tr.compressSet = true
	if n, ok := decode(d, f, key, v, toInt, between(0, 65536, "0-65536")); ok {
		d.ep.Transform.compress().MinResponseBodyBytes = n
	}
}

var mediaTypeRe = regexp.MustCompile(`^[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+*-]+$`)

func setCompressExcluded(d *draft, f *Field, key string, v any) {
	d.tr.compressSet = true
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.ep.Transform.compress().ExcludedContentTypes = normalizeList(items, func(m string) (string, bool) {
		m, _, _ = strings.Cut(strings.ToLower(m), ";")
		m = strings.TrimSpace(m)
		return m, mediaTypeRe.MatchString(m)
	}, func(m string) {
		d.add(f.Code, key, m, "dropped", fmt.Sprintf("invalid media type %q: want type/subtype", m), "")
	})
}

func setRedirectScheme(d *draft, f *Field, key string, v any) {
	r := d.ep.Transform.redirectScheme()
	s, err := toString(v)
	if err == nil {
		s = strings.ToLower(s)
		if s == "http" || s == "https" {
			r.Scheme = s
			return
		}
		err = fmt.Errorf("want http or https")
	}
	d.bad(f, key, v, err.Error())
}

func setRedirectSchemePort(d *draft, f *Field, key string, v any) {
	r := d.ep.Transform.redirectScheme()
	if n, ok := decode(d, f, key, v, toInt, checkPort); ok {
		r.Port = n
	}
}

func setRedirectSchemePermanent(d *draft, f *Field, key string, v any) {
	r := d.ep.Transform.redirectScheme()
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		r.Permanent = b
	}
}

func setRedirectRegexPermanent(d *draft, f *Field, key string, v any) {
	r := d.ep.Transform.redirectRegex()
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		r.Permanent = b
	}
}

// setRegex sets a policy's regular expression; group makes the policy
// exist so that finish can tell a half-given one.
func setRegex[P any](ptr func(*Transform) *string, group func(*Transform) P) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		d.seeTransform(f)
		group(&d.ep.Transform)
		s, ok := decode(d, f, key, v, toString, func(s string) error {
			switch {
			case s == "":
				return fmt.Errorf("empty regular expression")
			case len(s) > 1024:
				return fmt.Errorf("longer than 1024 bytes")
			}
			_, err := regexp.Compile(s)
			return err
		})
		if ok {
			*ptr(&d.ep.Transform) = s
		}
	}
}

func setReplacement(ptr func(*Transform) *string) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		d.seeTransform(f)
		s, ok := decode(d, f, key, v, toString, func(s string) error {
			if s == "" || len(s) > 2048 || strings.IndexFunc(s, unicode.IsControl) >= 0 {
				return fmt.Errorf("want a non-empty replacement without control characters, at most 2048 bytes")
			}
			return nil
		})
		if ok {
			*ptr(&d.ep.Transform) = s
		}
	}
}

func setReplacePath(d *draft, f *Field, key string, v any) {
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		switch {
		case !strings.HasPrefix(s, "/"):
			return fmt.Errorf("must start with /")
		case badPathChar(s):
			return fmt.Errorf("no query, fragment or spaces")
		case hasDotSegment(s):
			return fmt.Errorf("no . or .. segments")
		}
		return nil
	})
	if ok {
		d.ep.Transform.ReplacePath = s
	}
}

func setStickyEnabled(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.tr.stickyEnabled = &b
	}
}

func setStickyName(d *draft, f *Field, key string, v any) {
	d.tr.stickySet = true
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		// A cookie-name is an RFC 6265 4.1.1 token: what a header name is.
		if !httpguts.ValidHeaderFieldName(s) || len(s) > 128 {
			return fmt.Errorf("not an RFC 6265 cookie name (a token of at most 128 bytes)")
		}
		return nil
	})
	if ok {
		d.ep.Transform.sticky().CookieName = s
	}
}

// stickyBool reads and writes one attribute of the sticky cookie.
func stickyBool(ptr func(*Sticky) *bool) readWrite {
	return readWrite{setStickyBool(ptr), inSticky(func(s *Sticky) any { return *ptr(s) })}
}

func setStickyBool(ptr func(*Sticky) *bool) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		d.tr.stickySet = true
		if b, ok := decode(d, f, key, v, toBool, nil); ok {
			*ptr(d.ep.Transform.sticky()) = b
		}
	}
}

func setStickySameSite(d *draft, f *Field, key string, v any) {
	d.tr.stickySet = true
	s, err := toString(v)
	if err == nil {
		switch s = strings.ToLower(s); s {
		case SameSiteNone, SameSiteLax, SameSiteStrict:
			d.ep.Transform.sticky().SameSite = s
			return
		}
		err = fmt.Errorf("want none, lax or strict")
	}
	d.bad(f, key, v, err.Error())
}
