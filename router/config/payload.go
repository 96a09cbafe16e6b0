package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"go.yaml.in/yaml/v3"
)

// Format is the encoding of an API payload.
type Format uint8

// Payload formats.
const (
	FormatJSON Format = iota
	FormatYAML
)

// InputError is a structural problem with an API payload: the entrypoint
// cannot be stored at all. Status is 400 for a malformed body and 422 for a
// well-formed one that cannot be an entrypoint (bad name, no hostnames).
// Field-level problems are never InputErrors: they are diagnostics with a
// fallback.
type InputError struct {
	Status      int
	Message     string
	Diagnostics []diagnostics.Diagnostic
}

// Error implements error.
func (e *InputError) Error() string { return e.Message }

// The statuses of an InputError, written out rather than taken from
// net/http so that this package links nothing of an HTTP client or server.
const (
	statusBadRequest          = 400
	statusUnprocessableEntity = 422
)

// NamePattern is what an API entrypoint name (its id) must match.
var NamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// maxNameLen bounds names: they become ids in URLs, metrics and logs.
const maxNameLen = 128

// jsonNames are the accepted config JSON paths, for did-you-mean.
var jsonNames = func() []string {
	var out []string
	for _, f := range fieldTable {
		if strings.HasPrefix(f.JSON, "config.") {
			out = append(out, f.JSON)
			out = append(out, f.JSONAliases...)
		}
	}
	out = append(out, "config.retry", "config.health_check", "config.passive_health", "config.circuit_breaker")
	out = append(out, slices.Sorted(maps.Keys(accessGroups))...)
	return append(out, slices.Sorted(maps.Keys(transformJSONGroups()))...)
}()

// jsonGroups are config paths whose value is an object of fields.
var jsonGroups = func() map[string]diagnostics.Code {
	m := map[string]diagnostics.Code{
		"config.retry":           diagnostics.BadRetry,
		"config.health_check":    diagnostics.BadHealthCheck,
		"config.passive_health":  diagnostics.BadPassiveHealth,
		"config.circuit_breaker": diagnostics.BadCircuitBreaker,
		"config.tls":             diagnostics.BadTLS,
		"config.tcp":             diagnostics.BadTCP,
	}
	maps.Copy(m, transformJSONGroups())
	return m
}()

var (
	topLevelKeys = []string{"name", "protocol", "backends", "config", "created"}
	backendKeys  = []string{"address", "port", "weight", "name"}
)

// DecodeEntrypoint decodes an API payload (Sōzune's shape:
// {"name","protocol","backends":[…],"config":{…}}) through the same field
// table as labels. Field-level problems fall back per field and are
// returned as diagnostics keyed by JSON path; a structural problem returns
// an *InputError. src names the object; its empty parts are filled
// (Provider "api", ObjectID and ObjectName the entrypoint name).
func DecodeEntrypoint(format Format, body []byte, src diagnostics.Source) (Entrypoint, []diagnostics.Diagnostic, error) {
	root, err := parsePayload(format, body)
	if err != nil {
		return Entrypoint{}, nil, err
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return Entrypoint{}, nil, &InputError{Status: statusBadRequest, Message: "payload must be an object"}
	}
	obj = canonicalKeys(obj, topLevelKeys)

	name, err := decodeName(obj["name"])
	if err != nil {
		return Entrypoint{}, nil, err
	}
	if src.Provider == "" {
		src.Provider = SourceAPI
	}
	if src.ObjectID == "" {
		src.ObjectID = name
	}
	if src.ObjectName == "" {
		src.ObjectName = name
	}

	d := newDraft(src, func(f *Field) string { return f.JSON })
	if p, ok := obj["protocol"]; ok && p != nil {
		s, isStr := p.(string)
		switch {
		case isStr && strings.EqualFold(strings.TrimSpace(s), ProtocolTCP):
			d.asTCP()
		case !isStr || !strings.EqualFold(strings.TrimSpace(s), ProtocolHTTP):
			diag := diagnostics.New(diagnostics.UnknownProtocol, src, "protocol", displayValue(p), "",
				"unsupported protocol: only Http and Tcp are routed", "")
			return Entrypoint{}, nil, &InputError{Status: statusUnprocessableEntity,
				Message: fmt.Sprintf("unsupported protocol %s: only Http and Tcp are supported", displayValue(p)), Diagnostics: []diagnostics.Diagnostic{diag}}
		}
	}
	var created time.Time
	if c, ok := obj["created"]; ok && c != nil {
		s, _ := c.(string)
		t, perr := time.Parse(time.RFC3339Nano, s)
		if perr != nil {
			d.add(diagnostics.UnknownKey, "created", displayValue(c), "", "created must be an RFC 3339 timestamp", "")
		} else {
			created = t.UTC()
		}
	}
	for _, k := range sortedConfigKeys(obj) {
		if !hasString(topLevelKeys, k) {
			d.add(diagnostics.UnknownKey, k, displayValue(obj[k]), "", fmt.Sprintf("unknown field %q", k), unknownJSONHint(k, topLevelKeys))
		}
	}

	cfg, ok := obj["config"].(map[string]any)
	if !ok && obj["config"] != nil {
		return Entrypoint{}, nil, &InputError{Status: statusUnprocessableEntity, Message: "config must be an object"}
	}
	var items []fieldValue
	flattenConfig(d, "config", cfg, &items)
	d.apply(items)

	backends, err := decodeBackends(d, obj["backends"])
	if err != nil {
		return Entrypoint{}, nil, err
	}
	ep, routable := d.finish()
	if !routable {
		msg := "config.hostnames must hold at least one valid host name"
		if ep.Protocol == ProtocolTCP {
			msg = "config.tcp.listener must name a listener"
		}
		return Entrypoint{}, nil, &InputError{Status: statusUnprocessableEntity, Message: msg, Diagnostics: d.diags}
	}
	ep.ID, ep.Name, ep.Source, ep.Created = name, name, SourceAPI, created
	ep.Backends = backends
	return ep, d.diags, nil
}

func parsePayload(format Format, body []byte) (any, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &InputError{Status: statusBadRequest, Message: "empty payload"}
	}
	switch format {
	case FormatJSON:
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, &InputError{Status: statusBadRequest, Message: fmt.Sprintf("malformed JSON: %v", err)}
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, &InputError{Status: statusBadRequest, Message: "malformed JSON: data after the object"}
		}
		return v, nil
	case FormatYAML:
		var v any
		if err := yaml.Unmarshal(body, &v); err != nil {
			return nil, &InputError{Status: statusBadRequest, Message: fmt.Sprintf("malformed YAML: %v", err)}
		}
		return JSONValueOfYAML(v)
	}
	return nil, &InputError{Status: statusBadRequest, Message: fmt.Sprintf("unknown payload format %d", format)}
}

// JSONValueOfYAML converts a value decoded from YAML to the forms
// encoding/json gives (numbers as json.Number, maps with string keys,
// timestamps as RFC 3339 text), so that a YAML payload reaches the field
// table as its JSON twin would. The error is an *InputError.
func JSONValueOfYAML(v any) (any, error) { return fromYAML(v, 0) }

func fromYAML(v any, depth int) (any, error) {
	if depth > 64 {
		return nil, &InputError{Status: statusBadRequest, Message: "malformed YAML: nested too deeply"}
	}
	switch x := v.(type) {
	case nil, string, bool:
		return x, nil
	case int:
		return json.Number(strconv.Itoa(x)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), nil
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
	case time.Time:
		return x.Format(time.RFC3339Nano), nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := fromYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := fromYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := fromYAML(e, depth+1)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(k)] = c
		}
		return out, nil
	}
	return fmt.Sprint(v), nil
}

// clip shortens s for an error message: a client's mistake is quoted, not
// echoed back whole.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func decodeName(v any) (string, error) {
	s, ok := v.(string)
	switch {
	case v == nil:
		return "", &InputError{Status: statusUnprocessableEntity, Message: "name is required"}
	case !ok:
		return "", &InputError{Status: statusUnprocessableEntity, Message: fmt.Sprintf("name must be a string, got %s", displayValue(v))}
	case len(s) > maxNameLen || !NamePattern.MatchString(s):
		return "", &InputError{Status: statusUnprocessableEntity,
			Message: fmt.Sprintf("invalid name %q: want lower-case letters, digits, '_' and '-', starting with a letter or digit, at most %d characters", clip(s, maxNameLen+8), maxNameLen)}
	}
	return s, nil
}

// flattenConfig walks the config object and collects leaf fields; objects
// recurse only where the table has a group (retry, health_check,
// circuit_breaker). Keys are read in any case (Basic_Auth is basic_auth),
// and reported as written. An unknown key meant for an access policy makes
// the route deny (unreadAccess); any other unknown key is W013 with a
// hint: what Levee calls a Traefik or Sōzune key, else a did-you-mean.
func flattenConfig(d *draft, path string, obj map[string]any, items *[]fieldValue) {
	for _, k := range sortedConfigKeys(obj) {
		v := obj[k]
		p := path + "." + k
		if strings.EqualFold(p, unreadJSONKey) {
			d.setUnread(p, v)
			continue
		}
		if group, code, isGroup := lookupJSONGroup(p); isGroup {
			sub, ok := v.(map[string]any)
			if idx, alias, leaf := lookupJSON(p); !ok && leaf {
				// A group that is also a field ("tls": true) is that field.
				*items = append(*items, fieldValue{field: idx, alias: alias, key: p, value: v})
				continue
			}
			if !ok {
				if v != nil {
					// Giving the group at all turns the feature on, as any
					// of its fields would; the message promises defaults.
					d.add(code, p, displayValue(v), "defaults", p+" must be an object", "")
					d.enableGroup(group)
				}
				continue
			}
			flattenConfig(d, p, sub, items)
			continue
		}
		idx, alias, ok := lookupJSON(p)
		if !ok {
			hint := unknownJSONHint(p, jsonNames)
			name := strings.TrimPrefix(p, "config.")
			if !d.unreadAccess(name, p, displayValue(v), hint, labelGroups, accessLabelGroups) {
				d.add(diagnostics.UnknownKey, p, displayValue(v), "", fmt.Sprintf("unknown field %q", p), hint)
			}
			continue
		}
		*items = append(*items, fieldValue{field: idx, alias: alias, key: p, value: v})
	}
}

// lookupJSONGroup finds the config group of a payload path in any case,
// returning its canonical path and the code of a bad value.
func lookupJSONGroup(path string) (string, diagnostics.Code, bool) {
	for _, groups := range []map[string]diagnostics.Code{jsonGroups, accessGroups} {
		for g, code := range groups {
			if strings.EqualFold(g, path) {
				return g, code, true
			}
		}
	}
	return "", "", false
}

// enableGroup turns on the feature a config group configures.
func (d *draft) enableGroup(path string) {
	switch path {
	case "config.circuit_breaker":
		d.cbSet = true
	case "config.health_check":
		d.hcSet = true
	case "config.compress":
		d.tr.compressSet = true
	case "config.sticky":
		d.tr.stickySet = true
	default:
		enableAccessGroup(d, path)
	}
}

func lookupJSON(path string) (idx int, alias bool, ok bool) {
	if !strings.HasPrefix(path, "config.") {
		return 0, false, false
	}
	for i, f := range fieldTable {
		if strings.EqualFold(f.JSON, path) {
			return i, false, true
		}
		for _, a := range f.JSONAliases {
			if strings.EqualFold(a, path) {
				return i, true, true
			}
		}
	}
	return 0, false, false
}

// decodeBackends decodes the backends list. A backend that cannot be used
// (no address) is dropped with W010; bad port and weight fall back.
func decodeBackends(d *draft, v any) ([]Backend, error) {
	if v == nil {
		d.add(diagnostics.NoBackends, "backends", "", "503 no-healthy-backend",
			"no backends: the entrypoint answers 503 until backends are given", "")
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, &InputError{Status: statusUnprocessableEntity, Message: "backends must be a list"}
	}
	portF, weightF := fieldByLabel("port"), fieldByLabel("weight")
	var out []Backend
	for i, raw := range list {
		prefix := fmt.Sprintf("backends[%d]", i)
		obj, ok := raw.(map[string]any)
		if !ok {
			d.add(diagnostics.NoAddress, prefix, displayValue(raw), "", "a backend must be an object with an address", "")
			continue
		}
		obj = canonicalKeys(obj, backendKeys)
		for _, k := range sortedConfigKeys(obj) {
			if !hasString(backendKeys, k) {
				d.add(diagnostics.UnknownKey, prefix+"."+k, displayValue(obj[k]), "", fmt.Sprintf("unknown field %q", k),
					didYouMean(k, backendKeys))
			}
		}
		addr, _ := obj["address"].(string)
		addr = strings.TrimSpace(addr)
		if addr == "" || strings.ContainsAny(addr, "/ ") {
			d.add(diagnostics.NoAddress, prefix+".address", displayValue(obj["address"]), "",
				"a backend needs an address (host name or IP, without scheme or port)", "")
			continue
		}
		b := Backend{Address: addr, Port: DefaultPort, Weight: DefaultWeight}
		if p, ok := obj["port"]; ok && p != nil {
			n, err := toInt(p)
			if err == nil {
				err = checkPort(n)
			}
			if err != nil {
				d.add(portF.Code, prefix+".port", displayValue(p), strconv.Itoa(DefaultPort), "invalid port: "+err.Error(), "")
			} else {
				b.Port = n
			}
		} else {
			d.add(diagnostics.PortDefaulted, prefix+".port", "", strconv.Itoa(DefaultPort), "no port given: using 80", "")
		}
		if w, ok := obj["weight"]; ok && w != nil {
			n, err := toInt(w)
			if err == nil {
				err = checkWeight(n)
			}
			if err != nil {
				d.add(weightF.Code, prefix+".weight", displayValue(w), strconv.Itoa(DefaultWeight), "invalid weight: "+err.Error(), "")
			} else {
				b.Weight = n
			}
		}
		if n, ok := obj["name"]; ok && n != nil {
			b.Name, _ = scalarText(n)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		d.add(diagnostics.NoBackends, "backends", "", "503 no-healthy-backend",
			"no usable backends: the entrypoint answers 503 until backends are given", "")
	}
	return out, nil
}

func didYouMean(got string, candidates []string) string {
	return diagnostics.DidYouMean(got, candidates)
}

// canonicalKeys returns obj with each key that is one of known in another
// case (Name, BACKENDS) under known's spelling: payload keys are read in any
// case. A key also given in known's own spelling is left as it is (and so
// reported unknown): the canonical spelling wins.
func canonicalKeys(obj map[string]any, known []string) map[string]any {
	var out map[string]any
	for k, v := range obj {
		for _, c := range known {
			if k == c || !strings.EqualFold(k, c) {
				continue
			}
			if _, both := obj[c]; both {
				break
			}
			if out == nil {
				out = maps.Clone(obj)
			}
			delete(out, k)
			out[c] = v
		}
	}
	if out == nil {
		return obj
	}
	return out
}

func sortedConfigKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func hasString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
