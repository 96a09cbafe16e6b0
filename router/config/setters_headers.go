package config

import (
	"fmt"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/levee-proxy/levee/diagnostics"
)

// The setters of the headers and CORS policies (fields_transform.go).

// mapEntries reads a map field's value: a JSON object, or text of
// "Name: value" lines; in a label <field>.<Name>=<value> the name is the
// rest of the key.
func mapEntries(f *Field, key string, v any) ([][2]string, error) {
	if obj, ok := v.(map[string]any); ok {
		out := make([][2]string, 0, len(obj))
		for _, name := range sortedConfigKeys(obj) {
			s, ok := scalarText(obj[name])
			if !ok && obj[name] != nil {
				return nil, fmt.Errorf("header %s: want a string", name)
			}
			out = append(out, [2]string{name, strings.TrimSpace(s)})
		}
		return out, nil
	}
	s, ok := scalarText(v)
	if !ok {
		return nil, fmt.Errorf("want an object of header names and values")
	}
	// The field part of the key is read in any case; the header name after
	// it is kept as written.
	if i := strings.LastIndex(asciiLower(key), strings.ToLower(f.Label)+"."); i >= 0 {
		return [][2]string{{key[i+len(f.Label)+1:], strings.TrimSpace(s)}}, nil
	}
	var out [][2]string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, found := strings.Cut(line, ":")
		if !found {
			return nil, fmt.Errorf("want Name: value, or the label %s.<Name>=<value>", f.Label)
		}
		out = append(out, [2]string{strings.TrimSpace(name), strings.TrimSpace(value)})
	}
	return out, nil
}

func setHeaderMap(ptr func(*Headers) *map[string]string) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		entries, err := mapEntries(f, key, v)
		if err != nil {
			d.bad(f, key, v, err.Error())
			return
		}
		m := ptr(d.ep.Transform.headers())
		for _, e := range entries {
			name, value := e[0], e[1]
			switch {
			case !httpguts.ValidHeaderFieldName(name):
				d.add(f.Code, key, name, "ignored", fmt.Sprintf("invalid %s: %q is not a header name", f.Label, name), "")
			case ReservedHeader(name):
				d.add(diagnostics.ReservedHeader, key, name, "ignored",
					fmt.Sprintf("%s cannot set %s: Levee manages it", f.Label, textproto.CanonicalMIMEHeaderKey(name)), "")
			case !httpguts.ValidHeaderFieldValue(value):
				d.add(f.Code, key, value, "ignored", fmt.Sprintf("invalid %s: the value of %s has control characters", f.Label, name), "")
			default:
				if *m == nil {
					*m = map[string]string{}
				}
				canon := textproto.CanonicalMIMEHeaderKey(name)
				(*m)[canon] = value
				if canon == "Strict-Transport-Security" {
					d.tr.sts = givenValue{key, value}
				}
			}
		}
	}
}

// headerMap reads and writes one header map, written only when it has
// entries.
func headerMap(ptr func(*Headers) *map[string]string) readWrite {
	return readWrite{setHeaderMap(ptr), omitEmpty(inHeaders(func(h *Headers) any { return *ptr(h) }))}
}

// headerBool reads and writes one security header switch.
func headerBool(ptr func(*Headers) *bool) readWrite {
	return readWrite{setHeaderBool(ptr), inHeaders(func(h *Headers) any { return *ptr(h) })}
}

func setHeaderBool(ptr func(*Headers) *bool) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		if b, ok := decode(d, f, key, v, toBool, nil); ok {
			*ptr(d.ep.Transform.headers()) = b
		}
	}
}

// referrerPolicies are the tokens of the W3C Referrer Policy.
var referrerPolicies = []string{"no-referrer", "no-referrer-when-downgrade", "origin", "origin-when-cross-origin",
	"same-origin", "strict-origin", "strict-origin-when-cross-origin", "unsafe-url"}

func setReferrerPolicy(d *draft, f *Field, key string, v any) {
	items, err := toList(v)
	if err == nil {
		for _, it := range items {
			if !slices.Contains(referrerPolicies, strings.ToLower(it)) {
				err = fmt.Errorf("%q is not a Referrer-Policy token (%s)", it, strings.Join(referrerPolicies, ", "))
				break
			}
		}
	}
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.ep.Transform.headers().ReferrerPolicy = strings.ToLower(strings.Join(items, ", "))
}

func setPermissionsPolicy(d *draft, f *Field, key string, v any) {
	s, ok := decode(d, f, key, v, toString, func(s string) error {
		if !httpguts.ValidHeaderFieldValue(s) || len(s) > 4096 {
			return fmt.Errorf("not a header value (control characters, or over 4096 bytes)")
		}
		return nil
	})
	if ok {
		d.ep.Transform.headers().PermissionsPolicy = s
	}
}

// validOrigin reports whether s is a serialised origin (RFC 6454 6.2):
// scheme "://" host [":" port], nothing else, lower-case as browsers send
// it.
func validOrigin(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Path == "" &&
		u.RawQuery == "" && u.Fragment == "" && u.User == nil && !u.ForceQuery && s == strings.ToLower(s)
}

func setCORSOrigins(d *draft, f *Field, key string, v any) {
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	c := d.ep.Transform.cors()
	c.AllowOrigins = normalizeList(items, func(o string) (string, bool) {
		o = strings.TrimSuffix(o, "/")
		return o, o == "*" || validOrigin(o)
	}, func(o string) {
		d.add(f.Code, key, o, "dropped", fmt.Sprintf("invalid origin %q: want scheme://host[:port] in lower case, or *", o), "")
	})
}

func setCORSMethods(d *draft, f *Field, key string, v any) {
	items, err := toList(v)
	if err != nil {
		d.bad(f, key, v, err.Error())
		return
	}
	d.ep.Transform.cors().AllowMethods = normalizeList(items, func(m string) (string, bool) {
		up := strings.ToUpper(m)
		return up, methodNames[up]
	}, func(m string) {
		d.add(f.Code, key, m, "dropped", fmt.Sprintf("unknown HTTP method %q: dropped", m), "")
	})
}

// corsHeaderList reads and writes one CORS header list, written only when
// it has names.
func corsHeaderList(ptr func(*CORS) *[]string) readWrite {
	return readWrite{setCORSHeaderList(ptr), omitEmpty(inCORS(func(c *CORS) any { return *ptr(c) }))}
}

func setCORSHeaderList(ptr func(*CORS) *[]string) func(d *draft, f *Field, key string, v any) {
	return func(d *draft, f *Field, key string, v any) {
		items, err := toList(v)
		if err != nil {
			d.bad(f, key, v, err.Error())
			return
		}
		*ptr(d.ep.Transform.cors()) = normalizeList(items, func(h string) (string, bool) {
			if h == "*" {
				return h, true
			}
			return textproto.CanonicalMIMEHeaderKey(h), httpguts.ValidHeaderFieldName(h)
		}, func(h string) {
			d.add(f.Code, key, h, "dropped", fmt.Sprintf("invalid header name %q: dropped", h), "")
		})
	}
}

func setCORSCredentials(d *draft, f *Field, key string, v any) {
	if b, ok := decode(d, f, key, v, toBool, nil); ok {
		d.ep.Transform.cors().AllowCredentials = b
		d.tr.corsCredentials = givenValue{key, displayValue(v)}
	}
}

func setCORSMaxAge(d *draft, f *Field, key string, v any) {
	t, ok := decode(d, f, key, v, toDuration, func(t time.Duration) error {
		if t < 0 || t > 24*time.Hour {
			return fmt.Errorf("must be between 0 and 24h")
		}
		return nil
	})
	if ok {
		d.ep.Transform.cors().MaxAge = t.Truncate(time.Second)
	}
}

// asciiLower lower-cases the ASCII letters of s and keeps every other byte,
// so that an index into the result is an index into s.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
