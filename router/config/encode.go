package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/breaker"
)

// EncodeEntrypoint renders ep as canonical JSON in the API payload shape.
// DecodeEntrypoint accepts it back and yields ep again (for an entrypoint
// that came out of the validator), which is what makes it fit for
// persistence and API responses.
//
// The payload is the field table walked: each row's getter gives its
// value and whether the payload writes it, and the value goes at the
// row's JSON path, in table order. Around the fields are the entrypoint's
// identity (name, protocol "Http" as in Sōzune's payloads, created) and
// each backend's address and name, which are not fields of the table.
func EncodeEntrypoint(ep Entrypoint) ([]byte, error) {
	root := &object{}
	root.set("name", ep.Name)
	proto := "Http"
	if ep.Protocol == ProtocolTCP {
		proto = "Tcp"
	}
	root.set("protocol", proto)
	backends := make([]*object, 0, len(ep.Backends))
	for i := range ep.Backends {
		b := &ep.Backends[i]
		o := &object{}
		o.set("address", b.Address)
		for _, f := range fieldTable {
			if path, ok := strings.CutPrefix(f.JSON, "backends[]."); ok {
				if err := putField(o, path, f, &ep, b); err != nil {
					return nil, err
				}
			}
		}
		if b.Name != "" {
			o.set("name", b.Name)
		}
		backends = append(backends, o)
	}
	root.set("backends", backends)
	for _, f := range fieldTable {
		if strings.HasPrefix(f.JSON, "config.") {
			if err := putField(root, f.JSON, f, &ep, nil); err != nil {
				return nil, err
			}
		}
	}
	// Unread is no field of the table: the keys no row could read. It is
	// written so that the route keeps denying once stored and read back.
	if len(ep.Access.Unread) > 0 {
		root.set(unreadJSONKey, ep.Access.Unread)
	}
	if !ep.Created.IsZero() {
		root.set("created", ep.Created.Format(time.RFC3339Nano))
	}
	out, err := root.appendJSON(make([]byte, 0, 512))
	if err != nil {
		return nil, fmt.Errorf("encode entrypoint %q: %w", ep.Name, err)
	}
	return out, nil
}

// putField writes field f of ep (or of backend b) at path in o, if its
// getter says the payload writes it.
func putField(o *object, path string, f Field, ep *Entrypoint, b *Backend) error {
	if !appliesTo(&f, ep.Protocol) {
		return nil
	}
	if f.get == nil {
		// Every row has a getter (TestEveryFieldRoundTrips): a field the
		// payload cannot carry would be lost from a stored entrypoint.
		return fmt.Errorf("encode entrypoint %q: field %s has no getter", ep.Name, f.Label)
	}
	if v, ok := f.get(ep, b); ok {
		o.set(path, payloadForm(v))
	}
	return nil
}

// A getter reads one field for the API payload: its value and whether the
// payload writes it at all (a group that is off, an empty optional value
// are left out). A config.* row's getter reads ep; a backends[] row's
// reads b, one backend of ep. Values are Go values; payloadForm writes
// durations, status lists and modes as text.
type getter func(ep *Entrypoint, b *Backend) (any, bool)

// readWrite is a field's setter and getter made from one accessor of the
// field, which a row gives as rw instead of set and get: breakerParam(
// func(p *breaker.Params) *int { return &p.MinRequests }, ...) both
// decodes into and encodes from MinRequests.
type readWrite struct {
	set func(d *draft, f *Field, key string, v any)
	get getter
}

// omitEmpty leaves the field out of the payload when it is empty.
func (rw readWrite) omitEmpty() readWrite {
	rw.get = omitEmpty(rw.get)
	return rw
}

// value is a field the payload always writes.
func value(read func(ep *Entrypoint) any) getter {
	return func(ep *Entrypoint, _ *Backend) (any, bool) { return read(ep), true }
}

// ofBackend is a backends[] field the payload always writes.
func ofBackend(read func(b *Backend) any) getter {
	return func(_ *Entrypoint, b *Backend) (any, bool) { return read(b), true }
}

// omitEmpty writes g's value only when its payload form is not empty
// (false, 0, "", an empty list or map), as encoding/json's omitempty.
func omitEmpty(g getter) getter {
	return func(ep *Entrypoint, b *Backend) (any, bool) {
		v, ok := g(ep, b)
		return v, ok && !isEmpty(payloadForm(v))
	}
}

// unwritten is a field the payload never writes because another carries
// it: circuitBreaker.enabled is the circuit_breaker group's presence.
func unwritten(*Entrypoint, *Backend) (any, bool) { return nil, false }

// group returns the getter constructor of a group of fields: read's value
// is written when the group is on (of returns non-nil) and never
// otherwise, so that an absent group stays absent. Each feature's file
// declares its groups beside its rows (inHealth in fields.go, inCORS in
// fields_transform.go).
func group[G any](of func(ep *Entrypoint) *G) func(read func(g *G) any) getter {
	return func(read func(g *G) any) getter {
		return func(ep *Entrypoint, _ *Backend) (any, bool) {
			if g := of(ep); g != nil {
				return read(g), true
			}
			return nil, false
		}
	}
}

// payloadForm is v as the payload writes it: durations as Go duration
// strings ("1m30s"), status lists as "500,502-504", the breaker mode by
// name. DecodeEntrypoint reads each form back.
func payloadForm(v any) any {
	switch x := v.(type) {
	case time.Duration:
		return x.String()
	case breaker.StatusSet:
		return x.String()
	case breaker.Mode:
		return x.String()
	}
	return v
}

// isEmpty reports whether v is what encoding/json's omitempty leaves out.
func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Slice, reflect.Map, reflect.String:
		return r.Len() == 0
	}
	return r.IsZero()
}

// nonNil is s, or an empty list for nil: the payload writes [] for a list
// that is always present.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// object is a JSON object that keeps its keys in the order they were
// first set, so that the payload follows the table's order. Objects are
// small (a group's fields): keys are found by a scan.
type object struct {
	keys []string
	vals []any
}

// set puts v at the dotted path, making the objects on the way.
func (o *object) set(path string, v any) {
	key, rest, nested := strings.Cut(path, ".")
	if !nested {
		o.put(key, v)
		return
	}
	sub, ok := o.get(key).(*object)
	if !ok {
		sub = &object{keys: make([]string, 0, 8), vals: make([]any, 0, 8)}
		o.put(key, sub)
	}
	sub.set(rest, v)
}

func (o *object) get(key string) any {
	if i := slices.Index(o.keys, key); i >= 0 {
		return o.vals[i]
	}
	return nil
}

func (o *object) put(key string, v any) {
	if i := slices.Index(o.keys, key); i >= 0 {
		o.vals[i] = v
		return
	}
	o.keys, o.vals = append(o.keys, key), append(o.vals, v)
}

// appendJSON appends o as JSON to buf, its keys in order; nested objects
// are written in place, every other value by encoding/json.
func (o *object) appendJSON(buf []byte) ([]byte, error) {
	buf = append(buf, '{')
	for i, k := range o.keys {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, k...) // the table's keys: [a-z_]
		buf = append(buf, '"', ':')
		var err error
		if buf, err = appendValue(buf, o.vals[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	return append(buf, '}'), nil
}

func appendValue(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case *object:
		return x.appendJSON(buf)
	case []*object:
		buf = append(buf, '[')
		for i, o := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = o.appendJSON(buf); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case int:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(buf, x, 10), nil
	case string:
		if plainJSON(x) {
			buf = append(buf, '"')
			buf = append(buf, x...)
			return append(buf, '"'), nil
		}
	}
	b, err := json.Marshal(v)
	return append(buf, b...), err
}

// plainJSON reports whether s is written in a JSON string as it is, by
// encoding/json too: printable ASCII without '"', '\\' or the '<', '>'
// and '&' that encoding/json escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
