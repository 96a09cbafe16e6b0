package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

// The decoders of named policies: the same field table, setters and
// unknown-key rules as a route's, keeping only the policy groups. A field
// that is not a policy's is W048 and ignored; an unknown key meant for an
// access policy is kept unread (E005, E006), so every route using the
// policy denies.

// CheckPolicyName checks a policy name: lower-case letters, digits, '_'
// and '-', starting with a letter or digit, at most 128 characters.
func CheckPolicyName(name string) error {
	if len(name) > maxNameLen || !NamePattern.MatchString(name) {
		return fmt.Errorf("invalid policy name %q: want lower-case letters, digits, '_' and '-', starting with a letter or digit, at most %d characters", clip(name, maxNameLen+8), maxNameLen)
	}
	return nil
}

// DecodePolicyLabels decodes the label fields of policy name (the part
// after <prefix>.policy.<name>.). key renders a field name as the full
// label key for diagnostics. src names the declaring object.
func DecodePolicyLabels(name string, fields map[string]string, src diagnostics.Source, key func(field string) string) (Policy, []diagnostics.Diagnostic) {
	d := newDraft(src, func(f *Field) string { return key(f.Label) })
	var items []fieldValue
	for field, value := range fields {
		idx, alias, ok := lookupLabel(field)
		if !ok {
			hint := unknownLabelHint(field, key)
			if !d.unreadAccess(field, key(field), value, hint, labelGroups, accessLabelGroups) {
				d.add(diagnostics.UnknownKey, key(field), value, "", fmt.Sprintf("unknown field %q", field), hint)
			}
			continue
		}
		items = append(items, fieldValue{field: idx, alias: alias, key: key(field), value: value})
	}
	return d.finishPolicy(name, items), d.diags
}

// DecodePolicy decodes an API payload of a policy:
// {"name": ..., "config": {...}} with the config groups of an entrypoint
// payload. A structural problem (malformed body, bad name) is an
// *InputError.
func DecodePolicy(format Format, body []byte, src diagnostics.Source) (Policy, []diagnostics.Diagnostic, error) {
	root, err := parsePayload(format, body)
	if err != nil {
		return Policy{}, nil, err
	}
	obj, ok := root.(map[string]any)
	if !ok {
		return Policy{}, nil, &InputError{Status: statusBadRequest, Message: "payload must be an object"}
	}
	known := []string{"name", "config", "created"}
	obj = canonicalKeys(obj, known)
	name, _ := obj["name"].(string)
	if err := CheckPolicyName(name); err != nil {
		return Policy{}, nil, &InputError{Status: statusUnprocessableEntity, Message: err.Error()}
	}
	if src.Provider == "" {
		src.Provider = SourceAPI
	}
	if src.ObjectID == "" {
		src.ObjectID, src.ObjectName = name, name
	}
	d := newDraft(src, func(f *Field) string { return f.JSON })
	var created time.Time
	for _, k := range sortedConfigKeys(obj) {
		switch {
		case k == "created":
			s, _ := obj[k].(string)
			if t, perr := time.Parse(time.RFC3339Nano, s); perr == nil {
				created = t.UTC()
			} else if obj[k] != nil {
				d.add(diagnostics.UnknownKey, k, displayValue(obj[k]), "", "created must be an RFC 3339 timestamp", "")
			}
		case !hasString(known, k):
			d.add(diagnostics.UnknownKey, k, displayValue(obj[k]), "", fmt.Sprintf("unknown field %q", k), unknownJSONHint(k, known))
		}
	}
	cfg, ok := obj["config"].(map[string]any)
	if !ok && obj["config"] != nil {
		return Policy{}, nil, &InputError{Status: statusUnprocessableEntity, Message: "config must be an object"}
	}
	var items []fieldValue
	flattenConfig(d, "config", cfg, &items)
	p := d.finishPolicy(name, items)
	p.Source, p.Created = SourceAPI, created
	return p, d.diags, nil
}

// finishPolicy applies the policy fields of items (W048 for the others)
// and the cross-field rules of the policy groups, and returns the policy.
func (d *draft) finishPolicy(name string, items []fieldValue) Policy {
	kept := items[:0]
	for _, it := range items {
		f := &fieldTable[it.field]
		if _, ok := policyGroupOf(f); !ok {
			d.add(diagnostics.NotAPolicyField, it.key, displayValue(it.value), "ignored",
				fmt.Sprintf("%s is not a policy field: a named policy holds policy groups only", f.Label),
				"set it on each route instead")
			continue
		}
		kept = append(kept, it)
	}
	d.apply(kept)
	d.finishUnread()
	d.finishTransform()
	diagnostics.Sort(d.diags)
	return Policy{Name: name, Source: d.src.Provider, Origin: d.src,
		Access: d.ep.Access, Transform: d.ep.Transform, MaxRequestBodyBytes: d.ep.MaxRequestBodyBytes}
}

// EncodePolicy renders p as canonical JSON in the API payload shape, which
// DecodePolicy reads back as p: the policy rows of the field table walked,
// as EncodeEntrypoint walks all of them.
func EncodePolicy(p Policy) ([]byte, error) {
	ep := Entrypoint{Name: p.Name, Access: p.Access, Transform: p.Transform, MaxRequestBodyBytes: p.MaxRequestBodyBytes}
	root := &object{}
	root.set("name", p.Name)
	root.set("config", &object{})
	for _, f := range fieldTable {
		if _, ok := policyGroupOf(&f); ok && strings.HasPrefix(f.JSON, "config.") {
			if err := putField(root, f.JSON, f, &ep, nil); err != nil {
				return nil, fmt.Errorf("encode policy %q: %w", p.Name, err)
			}
		}
	}
	if len(p.Access.Unread) > 0 {
		root.set(unreadJSONKey, p.Access.Unread)
	}
	if !p.Created.IsZero() {
		root.set("created", p.Created.Format(time.RFC3339Nano))
	}
	out, err := root.appendJSON(make([]byte, 0, 256))
	if err != nil {
		return nil, fmt.Errorf("encode policy %q: %w", p.Name, err)
	}
	return out, nil
}
