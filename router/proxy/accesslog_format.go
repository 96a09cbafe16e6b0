package proxy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// AccessLogFormat is how access lines are written.
type AccessLogFormat uint8

const (
	// AccessLogJSON is one zerolog event per request (event=access).
	AccessLogJSON AccessLogFormat = iota
	// AccessLogCommon is Apache's Common Log Format,
	// `%h %l %u %t "%r" %>s %b`.
	AccessLogCommon
	// AccessLogCombined is Apache's Combined Log Format: Common's fields,
	// then `"%{Referer}i" "%{User-agent}i"`.
	AccessLogCombined
)

// ParseAccessLogFormat reads json, common or combined.
func ParseAccessLogFormat(s string) (AccessLogFormat, error) {
	switch s {
	case "json":
		return AccessLogJSON, nil
	case "common":
		return AccessLogCommon, nil
	case "combined":
		return AccessLogCombined, nil
	}
	return AccessLogJSON, fmt.Errorf("access log format %q: want json, common or combined", s)
}

// clfTime is Apache's %t: the time the request was received.
const clfTime = "[02/Jan/2006:15:04:05 -0700]"

// appendCLF appends x's line in Common (or, with combined, Combined) Log
// Format, as Apache's mod_log_config writes it: "-" for a field that is
// missing, every quoted or user-supplied field escaped as ap_escape_logitem
// does.
func appendCLF(b []byte, x *exchange, status int, combined bool) []byte {
	b = append(b, peerHost(x.req.RemoteAddr)...)
	b = append(b, " - "...)
	switch user := x.user(); {
	case !x.authenticated():
		b = append(b, '-')
	case user == "":
		b = append(b, `""`...) // Apache's rendering of an empty user
	default:
		b = appendLogItem(b, user)
	}
	b = append(b, ' ')
	b = x.start.AppendFormat(b, clfTime)
	b = append(b, ` "`...)
	b = appendLogItem(b, x.req.Method)
	b = append(b, ' ')
	uri := x.uri
	if uri == "" { // a request made in-process, not read from a client
		uri = x.req.URL.RequestURI()
	}
	b = appendLogItem(b, uri)
	b = append(b, ' ')
	b = appendLogItem(b, x.req.Proto)
	b = append(b, `" `...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	if n := x.bytesSent(); n > 0 {
		b = strconv.AppendInt(b, n, 10)
	} else {
		b = append(b, '-') // %b: "-" rather than 0
	}
	if combined {
		b = appendHeaderItem(b, x.req.Header["Referer"])
		b = appendHeaderItem(b, x.req.Header["User-Agent"])
	}
	return append(b, '\n')
}

// appendHeaderItem appends ` "value"` for %{Name}i: the field's values
// joined by ", ", or - when the request had no such field.
func appendHeaderItem(b []byte, vv []string) []byte {
	b = append(b, ` "`...)
	if len(vv) == 0 {
		b = append(b, '-')
	}
	for i, v := range vv {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendLogItem(b, v)
	}
	return append(b, '"')
}

// peerHost is %h without name lookups: the address of the connection's
// peer, without its port.
func peerHost(remote string) string {
	if remote == "" {
		return "-"
	}
	if i := strings.LastIndexByte(remote, ':'); i > 0 && strings.IndexByte(remote[i:], ']') < 0 {
		remote = remote[:i]
	}
	return strings.TrimSuffix(strings.TrimPrefix(remote, "["), "]")
}

// appendLogItem appends s escaped as Apache's ap_escape_logitem does, so
// that a client cannot forge a line or a field: `"` and `\` get a
// backslash; \b, \n, \r, \t and \v their C escapes; every other byte that
// is not printable ASCII (controls, DEL, bytes of 0x80 and above) \xhh.
func appendLogItem(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20 && c < 0x7f:
			b = append(b, c)
		case c == '\b':
			b = append(b, '\\', 'b')
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c == '\v':
			b = append(b, '\\', 'v')
		default:
			b = append(b, '\\', 'x', hex[c>>4], hex[c&0xf])
		}
	}
	return b
}

// StatusRange is an inclusive range of status codes, [Lo, Hi].
type StatusRange struct{ Lo, Hi int }

// AccessLogFilter chooses the requests that are logged, as Traefik's
// access log filters do: with no filter set every request is; otherwise a
// request is logged when any set filter keeps it.
type AccessLogFilter struct {
	// Status keeps requests answered with a status in one of the ranges.
	Status []StatusRange
	// MinDuration keeps requests that took longer than it.
	MinDuration time.Duration
	// Retries keeps requests that took more than one attempt or whose
	// backend failed.
	Retries bool
}

// keep reports whether the request is logged.
func (f *AccessLogFilter) keep(status int, d time.Duration, retried bool) bool {
	if len(f.Status) == 0 && f.MinDuration <= 0 && !f.Retries {
		return true
	}
	for _, r := range f.Status {
		if status >= r.Lo && status <= r.Hi {
			return true
		}
	}
	return (f.MinDuration > 0 && d > f.MinDuration) || (f.Retries && retried)
}

// ParseStatusRanges reads comma-separated codes and ranges of codes,
// "400-599,302", each within 100-999.
func ParseStatusRanges(s string) ([]StatusRange, error) {
	var out []StatusRange
	var errs []error
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(item, "-")
		if !isRange {
			hi = lo
		}
		l, lerr := strconv.Atoi(strings.TrimSpace(lo))
		h, herr := strconv.Atoi(strings.TrimSpace(hi))
		switch {
		case lerr != nil || herr != nil || l < 100 || h > 999 || l > h:
			errs = append(errs, fmt.Errorf("%q: want a status code (100-999) or a range of them, e.g. 400-599", item))
		default:
			out = append(out, StatusRange{l, h})
		}
	}
	return out, errors.Join(errs...)
}
