package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
)

// draft is an entrypoint being decoded. Setters from the field table write
// into it and report problems; finish applies the cross-field rules (hosts
// required, breaker parameters validated together) once all fields are in.
type draft struct {
	ep    Entrypoint
	src   diagnostics.Source
	keyOf func(f *Field) string
	diags []diagnostics.Diagnostic

	port      int // 0: not given
	weight    int
	weightSet bool

	hc    HealthCheck
	hcSet bool
	// given maps a field's label to the key and value the operator wrote,
	// for the cross-field rules' diagnostics.
	given map[string]givenValue

	cb        CircuitBreaker // Params hold only the given fields (zero = default)
	cbSet     bool
	cbEnabled *bool
	// cbGiven maps a breaker field's label name ("minRequests") to what the
	// operator wrote, so Params.Validate's findings carry their key and value.
	cbGiven map[string]givenValue

	tr transformDraft // the transform policies' groups (setters_transform.go)
}

type givenValue struct{ key, value string }

// item is one field value as it arrived: the key as written (label key or
// JSON path) and the value.
type fieldValue struct {
	field int // index in fieldTable
	alias bool
	key   string
	value any
}

func newDraft(src diagnostics.Source, keyOf func(f *Field) string) *draft {
	cb := DefaultCircuitBreaker()
	cb.Params = breaker.Params{}
	return &draft{
		ep:      DefaultEntrypoint(),
		src:     src,
		keyOf:   keyOf,
		weight:  DefaultWeight,
		hc:      DefaultHealthCheck(),
		cb:      cb,
		cbGiven: map[string]givenValue{},
		given:   map[string]givenValue{},
	}
}

func (d *draft) add(code diagnostics.Code, key, value, fallback, msg, hint string) {
	d.diags = append(d.diags, diagnostics.New(code, d.src, key, value, fallback, msg, hint))
}

// bad reports that field f's value is invalid and its default applies.
func (d *draft) bad(f *Field, key string, v any, reason string) {
	// The default applies, so the cross-field rules see no given value.
	delete(d.given, f.Label)
	d.add(f.Code, key, displayValue(v), fallbackText(f.Default), fmt.Sprintf("invalid %s: %s", f.Label, reason), "")
}

// fallbackText is a field's default as a diagnostic names what applies
// instead of a bad value, after "using": the table's "(none)" reads
// "none" and "0 (no header)" reads "0, no header"; a required field has
// no default, and names none.
func fallbackText(def string) string {
	switch {
	case def == "(required)":
		return ""
	case strings.HasPrefix(def, "(") && strings.HasSuffix(def, ")"):
		return def[1 : len(def)-1]
	}
	if v, note, ok := strings.Cut(def, " ("); ok && strings.HasSuffix(note, ")") {
		return v + ", " + strings.TrimSuffix(note, ")")
	}
	return def
}

// apply runs the setters of items in table order. A field given twice (by
// its name and an alias) keeps the canonical one and reports the other.
func (d *draft) apply(items []fieldValue) {
	sort.SliceStable(items, func(i, j int) bool {
		if items[i].field != items[j].field {
			return items[i].field < items[j].field
		}
		if items[i].alias != items[j].alias {
			return !items[i].alias
		}
		return items[i].key < items[j].key
	})
	applied := map[string]string{}
	for _, it := range items {
		f := &fieldTable[it.field]
		// A map field's entries are separate keys (headers.X.Name), the
		// same in any case.
		slot := f.Label
		if f.Kind == KindMap {
			slot += "\x00" + strings.ToLower(it.key)
		}
		if first, dup := applied[slot]; dup {
			d.add(diagnostics.DuplicateKey, it.key, displayValue(it.value), "value of "+first,
				fmt.Sprintf("%s is given twice; %s wins", f.Label, first), "remove "+it.key)
			continue
		}
		applied[slot] = it.key
		if it.value == nil {
			continue // JSON null: not given
		}
		if d.skipped(f, it.key, it.value) {
			continue
		}
		d.given[f.Label] = givenValue{it.key, displayValue(it.value)}
		f.set(d, f, it.key, it.value)
	}
}

// finish applies the cross-field rules and returns the entrypoint, whether
// it can be routed, and the diagnostics.
func (d *draft) finish() (Entrypoint, bool) {
	switch d.ep.Protocol {
	case ProtocolTCP:
		return d.finishTCP()
	case ProtocolUDP:
		return d.finishUDP()
	}
	routable := true
	if len(d.ep.Hosts) == 0 {
		d.add(diagnostics.MissingHost, d.keyOf(fieldByLabel("host")), "", "",
			"no valid host: the service is not routed", "")
		routable = false
	}
	if d.hcSet {
		hc := d.healthCheck()
		d.ep.HealthCheck = &hc
	}
	d.passiveHealth()
	d.finishUnread()
	d.finishTransform()
	d.tlsRules()
	d.hstsRules()
	d.backendTLSRules()
	d.finishBreaker()
	diagnostics.Sort(d.diags)
	return d.ep, routable
}

// finishTCP is finish for a TCP route: its own rules and the breaker's.
func (d *draft) finishTCP() (Entrypoint, bool) {
	routable := d.tcpRules()
	if d.hcSet {
		hc := d.healthCheck()
		d.ep.HealthCheck = &hc
	}
	d.finishBreaker()
	diagnostics.Sort(d.diags)
	return d.ep, routable
}

// finishBreaker validates the breaker's parameters together, when any
// circuitBreaker.* field turned it on.
func (d *draft) finishBreaker() {
	enabled := d.cbSet
	if d.cbEnabled != nil {
		enabled = *d.cbEnabled
	}
	if enabled {
		cb := d.cb
		p, errs := cb.Params.Validate()
		for _, fe := range errs {
			f := fieldByLabel("circuitBreaker." + fe.Field)
			g, ok := d.cbGiven[fe.Field]
			if !ok {
				g = givenValue{value: fe.Value}
				if f != nil {
					g.key = d.keyOf(f)
				}
			}
			d.add(diagnostics.BadCircuitBreaker, g.key, g.value, fallbackText(fe.Default),
				fmt.Sprintf("invalid circuitBreaker.%s: %s", fe.Field, fe.Reason), "")
		}
		cb.Params = p
		d.ep.CircuitBreaker = &cb
		d.staleRules()
	}
}

// healthCheck is the health check as the prober will run it
// (HealthCheck.Effective): a value Levee adjusts shows adjusted in every
// view, with I004 naming the value written and the one in force.
func (d *draft) healthCheck() HealthCheck {
	hc := d.hc.Effective()
	if hc.Timeout != d.hc.Timeout {
		g := d.givenOr("healthCheck.timeout", d.hc.Timeout.String())
		d.add(diagnostics.HealthTimeoutAdjusted, g.key, g.value, hc.Timeout.String(),
			fmt.Sprintf("health-check timeout %s is longer than the interval %s: shortened to %s", d.hc.Timeout, hc.Interval, hc.Timeout),
			"set healthCheck.timeout at most healthCheck.interval")
	}
	return hc
}

// passiveHealth applies the cross-field rule of passive ejection: the cap
// of the ejection time is not below the first ejection. A cap the operator
// gave that is too small is W036 and falls back as Options did; a default
// cap below a long ejectTime silently follows it.
func (d *draft) passiveHealth() {
	ph := &d.ep.PassiveHealth
	if ph.MaxEjectTime >= ph.EjectTime {
		return
	}
	fallback := max(DefaultMaxEjectTime, ph.EjectTime)
	if g, ok := d.given["passiveHealth.maxEjectTime"]; ok {
		d.add(diagnostics.BadPassiveHealth, g.key, g.value, fallback.String(),
			fmt.Sprintf("invalid passiveHealth.maxEjectTime: below ejectTime %s", ph.EjectTime), "")
	}
	ph.MaxEjectTime = fallback
}

// givenOr is what the operator wrote for the field with label, or its
// default key and value when nothing was written.
func (d *draft) givenOr(label, value string) givenValue {
	if g, ok := d.given[label]; ok {
		return g
	}
	return givenValue{key: d.keyOf(fieldByLabel(label)), value: value}
}

func fieldByLabel(label string) *Field {
	for i := range fieldTable {
		if fieldTable[i].Label == label {
			return &fieldTable[i]
		}
	}
	return nil
}

// LabelConfig is one service's configuration decoded from labels.
type LabelConfig struct {
	// Entrypoint is normalised; its ID, Name, Source, Created and Backends
	// are the caller's to fill.
	Entrypoint Entrypoint
	// Port is the port label, 0 when not given (the caller chooses).
	Port int
	// Weight applies to every backend of the service.
	Weight int
	// Routable is false when an error (E002) keeps the service unrouted.
	Routable bool
}

// labelNames are the accepted label field names, for did-you-mean.
var labelNames = func() []string {
	var out []string
	for _, f := range fieldTable {
		out = append(out, f.Label)
		out = append(out, f.LabelAliases...)
	}
	return out
}()

// DecodeLabels decodes one service's label fields (the part after
// <prefix>.<protocol>.<service>.) through the field table. key renders a
// field name as the full label key for diagnostics. Unknown fields are W013
// with a hint (what Levee calls a Traefik or Sōzune key, else a
// did-you-mean); bad values fall back per field.
func DecodeLabels(fields map[string]string, src diagnostics.Source, key func(field string) string) (LabelConfig, []diagnostics.Diagnostic) {
	return decodeLabels(fields, src, key, nil)
}

// decodeLabels is DecodeLabels with setup applied to the draft before any
// field (DecodeTCPLabels makes it a TCP route's).
func decodeLabels(fields map[string]string, src diagnostics.Source, key func(field string) string, setup func(*draft)) (LabelConfig, []diagnostics.Diagnostic) {
	d := newDraft(src, func(f *Field) string { return key(f.Label) })
	if setup != nil {
		setup(d)
	}
	var items []fieldValue
	for name, value := range fields {
		idx, alias, ok := lookupLabel(name)
		if !ok {
			hint := unknownLabelHint(name, key)
			if !d.unreadAccess(name, key(name), value, hint, labelGroups, accessLabelGroups) {
				d.add(diagnostics.UnknownKey, key(name), value, "", fmt.Sprintf("unknown field %q", name), hint)
			}
			continue
		}
		items = append(items, fieldValue{field: idx, alias: alias, key: key(name), value: value})
	}
	d.apply(items)
	ep, routable := d.finish()
	return LabelConfig{Entrypoint: ep, Port: d.port, Weight: d.weight, Routable: routable}, d.diags
}

// lookupLabel finds the field of a label name. Names are read in any case,
// as Traefik reads its labels (basicauth.users is basicAuth.users); the
// entry name of a map field (headers.customRequestHeaders.X-Name) is the
// operator's and is kept as written.
func lookupLabel(name string) (idx int, alias bool, ok bool) {
	for i, f := range fieldTable {
		if strings.EqualFold(f.Label, name) || f.Kind == KindMap && len(name) > len(f.Label)+1 && hasPrefixFold(name, f.Label+".") {
			return i, false, true
		}
		for _, a := range f.LabelAliases {
			if strings.EqualFold(a, name) {
				return i, true, true
			}
		}
	}
	return 0, false, false
}

// staleRules reports a serveStale that can keep no answer
// (staleFindings) on the route's own fields.
func (d *draft) staleRules() { d.addFindings(staleFindings(&d.ep)) }

// hasPrefixFold reports whether s begins with prefix in any case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}
