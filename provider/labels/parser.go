package labels

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/constraint"
	"github.com/levee-proxy/levee/router/config"
)

// DefaultPrefix is the label prefix when Parser.Prefix is empty.
const DefaultPrefix = "levee"

// Parser turns containers into entrypoints.
type Parser struct {
	// Prefix is the label prefix, "levee" by default.
	Prefix string
	// ExposedByDefault routes containers without <prefix>.enable=true.
	ExposedByDefault bool
	// OwnNetworks are the networks Levee's own container is attached to
	// (empty when Levee does not run in a container).
	OwnNetworks []string
	// OwnNetworkIDs are the IDs of OwnNetworks, by which a remote host's
	// container is found on a network Levee shares (hosts.go).
	OwnNetworkIDs []string
	// OnHost says Levee runs outside any container (the Docker provider
	// found none of its own). With no OwnNetworks, a Swarm task is then
	// dialled at its node's address when it publishes the route's port in
	// host mode (docs/swarm.md, "Levee on the host"). `levee validate`
	// leaves it unset: it does not know where `levee serve` runs.
	OnHost bool
	// Offline skips address resolution (`levee validate` on compose files):
	// backends get the container name as address and no W009/W010 is made.
	Offline bool
	// Constraint chooses the objects Levee routes (--docker-constraints):
	// a container or service whose labels do not satisfy it is left out
	// as if it had no label, with no route and no diagnostic. nil routes
	// every object.
	Constraint *constraint.Expr
	// Source names the provider in diagnostics and entrypoints:
	// config.SourceDocker when empty. The entrypoints of any other source
	// get IDs of the form <service>@<source> (web@swarm), so an ID says
	// where it came from and a container and a Swarm service of the same
	// name can run side by side.
	Source string
}

// sourceName returns the provider name.
func (p Parser) sourceName() string {
	if p.Source == "" {
		return config.SourceDocker
	}
	return p.Source
}

// candidate is one (container, service) whose labels decoded to a routable
// config, before replicas are grouped.
type candidate struct {
	c      *Container
	svc    string
	proto  string
	cfg    config.LabelConfig
	fields map[string]string
	net    *Network // chosen network; nil when none
	// vip: route a Swarm service through its virtual IP (lb.swarm=true).
	vip bool
}

// Parse turns the complete current set of containers into entrypoints and
// diagnostics. It is a pure function of its input, deterministic in order:
// entrypoints sorted by ID, diagnostics by object, service and key.
//
// Objects that do not satisfy p.Constraint are left out first.
//
// Replicas (same service name and same hosts) become one entrypoint with one
// backend per container; the oldest container's labels apply to all of them
// (W031 names the keys where a replica differs). Two groups with the same
// service name but different hosts get distinct IDs: the oldest keeps the
// service name, the next get "-2", "-3"… suffixes.
func (p Parser) Parse(containers []Container) ([]config.Entrypoint, []diagnostics.Diagnostic) {
	prefix := p.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	sorted := make([]*Container, 0, len(containers))
	for i := range containers {
		if p.Constraint.Match(containers[i].Labels) {
			sorted = append(sorted, &containers[i])
		}
	}
	sort.SliceStable(sorted, func(i, j int) bool { return older(sorted[i], sorted[j]) })

	var diags []diagnostics.Diagnostic
	var cands []candidate
	for _, c := range sorted {
		cs, ds := p.parseContainer(prefix, c)
		cands = append(cands, cs...)
		diags = append(diags, ds...)
	}

	eps, ds := p.group(prefix, cands)
	diags = append(diags, ds...)
	sort.SliceStable(eps, func(i, j int) bool { return eps[i].ID < eps[j].ID })
	diagnostics.Sort(diags)
	return eps, diags
}

func older(a, b *Container) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	if a.ID != b.ID {
		return a.ID < b.ID
	}
	return a.Name < b.Name
}

// source names object c in a diagnostic; a container of one of several
// Docker hosts is named host/name.
func (p Parser) source(c *Container, svc string) diagnostics.Source {
	name := c.Name
	if c.Host != "" {
		name = c.Host + "/" + c.Name
	}
	return diagnostics.Source{Provider: p.sourceName(), ObjectID: c.ID, ObjectName: name, Service: svc}
}

var globalKeys = []string{"enable", "network"}

// otherProtocols are real protocols Levee does not route (yet): no
// did-you-mean http for them.
var otherProtocols = map[string]bool{"tcp": true, "udp": true, "tls": true, "https": true, "grpc": true}

// parseContainer applies the grammar to one container's labels.
func (p Parser) parseContainer(prefix string, c *Container) ([]candidate, []diagnostics.Diagnostic) {
	diags := p.traefikOnly(prefix, c)
	src := p.source(c, "")
	enableKey, enableRaw, explicit := labelFold(c.Labels, prefix+".enable")
	enabled := p.ExposedByDefault
	if explicit {
		b, err := config.ParseBool(enableRaw)
		if err != nil {
			diags = append(diags, diagnostics.New(diagnostics.BadBool, src, enableKey, enableRaw, strconv.FormatBool(p.ExposedByDefault),
				"invalid boolean: want true/false, 1/0, yes/no or on/off", ""))
		} else {
			enabled = b
		}
	}
	if !enabled {
		// Not opted in: not a diagnostic, whatever else it carries, so
		// unrelated containers never produce noise. The exceptions are a
		// near miss of the enable label itself (levee.Enable=true) and a
		// container labelled for Traefik only (I003, above): the operator
		// meant to opt in and would otherwise get silence.
		return nil, append(diags, p.misspelledEnable(prefix, c)...)
	}

	keys := make([]string, 0, len(c.Labels))
	for k := range c.Labels {
		if hasPrefixFold(k, prefix+".") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)

	// Keys are read in any case, as Traefik reads its labels; the service
	// name is the operator's and keeps its case (App and app are two
	// services), as do the entry names of map fields.
	type svcKey struct{ proto, svc string }
	services := map[svcKey]map[string]string{}
	written := map[svcKey]map[string]string{} // field → the key as written
	var order []svcKey
	networkLabel, hasNetwork := "", false
	otherLabels := false
	declaresPolicies := false
	for _, k := range keys {
		rest := k[len(prefix)+1:]
		switch strings.ToLower(rest) {
		case "enable":
			continue
		case "network":
			networkLabel, hasNetwork = strings.TrimSpace(c.Labels[k]), true
			otherLabels = true
			continue
		}
		if isPolicyKey(rest) {
			declaresPolicies = true
			continue // a named policy (ParsePolicies)
		}
		otherLabels = true
		parts := strings.SplitN(rest, ".", 3)
		if len(parts) < 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			// A Traefik or Sōzune key straight under the prefix
			// (levee.tls=true) gets the foreign-key table's hint first.
			hint := config.ForeignLabelHint(rest, func(field string) string { return prefix + ".http.<service>." + field })
			if hint == "" && isServiceField(rest) {
				// A service's field without the service (levee.tls=true).
				hint = "a service field: write " + prefix + ".http.<service>." + rest
			}
			if hint == "" && len(parts) == 1 {
				hint = diagnostics.DidYouMean(rest, globalKeys)
				if hint != "" {
					hint = "did you mean " + prefix + "." + strings.TrimSuffix(strings.TrimPrefix(hint, "did you mean "), "?") + "?"
				}
			}
			diags = append(diags, diagnostics.New(diagnostics.UnknownKey, src, k, c.Labels[k], "",
				fmt.Sprintf("unknown label: want %s.enable, %s.network or %s.<protocol>.<service>.<field>", prefix, prefix, prefix), hint))
			continue
		}
		sk := svcKey{strings.ToLower(parts[0]), parts[1]}
		if services[sk] == nil {
			services[sk] = map[string]string{}
			written[sk] = map[string]string{}
			order = append(order, sk)
		}
		services[sk][parts[2]] = c.Labels[k]
		written[sk][parts[2]] = k
	}

	if len(order) == 0 {
		// A container that only declares named policies routes nothing,
		// as meant.
		if (explicit || otherLabels) && !declaresPolicies {
			diags = append(diags, diagnostics.New(diagnostics.NoService, src, enableKey, enableRaw, "",
				fmt.Sprintf("container is enabled but has no %s.<protocol>.<service>.<field> label: nothing is routed", prefix), ""))
		}
		return nil, diags
	}

	var net *Network
	if !p.Offline {
		var ds []diagnostics.Diagnostic
		net, ds = p.chooseNetwork(prefix, c, networkLabel, hasNetwork)
		diags = append(diags, ds...)
	}

	var cands []candidate
	for _, sk := range order {
		fields := services[sk]
		ssrc := p.source(c, sk.svc)
		if sk.proto != config.ProtocolHTTP && sk.proto != config.ProtocolTCP {
			first := sortedFieldNames(fields)[0]
			hint := ""
			if !otherProtocols[strings.ToLower(sk.proto)] && diagnostics.DidYouMean(sk.proto, []string{config.ProtocolHTTP}) != "" {
				hint = "did you mean " + prefix + "." + config.ProtocolHTTP + "." + sk.svc + "." + first + "?"
			}
			// Key and value are those of a real label (the first field of the
			// service), so the operator can find the line in the compose
			// file; the protocol is named in the message.
			diags = append(diags, diagnostics.New(diagnostics.UnknownProtocol, ssrc, written[sk][first], fields[first], "",
				fmt.Sprintf("unknown protocol %q: only http and tcp are routed; the labels of service %q are ignored", sk.proto, sk.svc), hint))
			continue
		}
		keyOf := func(field string) string {
			if k, ok := written[sk][field]; ok {
				return k
			}
			return prefix + "." + sk.proto + "." + sk.svc + "." + field
		}
		fields, vip, ds := p.swarmLB(c, fields, ssrc, keyOf)
		diags = append(diags, ds...)
		decodeFields := config.DecodeLabels
		if sk.proto == config.ProtocolTCP {
			decodeFields = config.DecodeTCPLabels
		}
		cfg, ds := decodeFields(fields, ssrc, keyOf)
		diags = append(diags, ds...)
		if !cfg.Routable {
			continue
		}
		cands = append(cands, candidate{c: c, svc: sk.svc, proto: sk.proto, cfg: cfg, fields: fields, net: net, vip: vip})
	}
	return cands, diags
}

// traefikPrefix starts the labels of Traefik, the proxy most compose files
// Levee meets were written for.
const traefikPrefix = "traefik."

// traefikOnly reports a container that carries traefik.* labels and no
// label under Levee's prefix: it was written for Traefik, Levee reads none
// of it, and the operator would otherwise get silence. It is one info
// diagnostic per container, keyed by its first traefik label, never one per
// label; a container with Levee labels too is being migrated and gets none.
func (p Parser) traefikOnly(prefix string, c *Container) []diagnostics.Diagnostic {
	first := ""
	for k := range c.Labels {
		if hasPrefixFold(k, prefix+".") {
			return nil
		}
		if strings.HasPrefix(k, traefikPrefix) && (first == "" || k < first) {
			first = k
		}
	}
	if first == "" {
		return nil
	}
	return []diagnostics.Diagnostic{diagnostics.New(diagnostics.TraefikLabels, p.source(c, ""), first, c.Labels[first], "",
		fmt.Sprintf("the container carries traefik.* labels and no %s.* label: Levee does not read Traefik's labels, so they route nothing", prefix),
		"see "+config.MigratingDoc+" for Levee's names of Traefik's labels")}
}

func (p Parser) misspelledEnable(prefix string, c *Container) []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for _, k := range sortedFieldNames(c.Labels) {
		if !hasPrefixFold(k, prefix+".") {
			continue
		}
		rest := k[len(prefix)+1:]
		if strings.EqualFold(rest, "enable") || strings.Contains(rest, ".") {
			continue
		}
		if diagnostics.DidYouMean(rest, []string{"enable"}) != "" {
			out = append(out, diagnostics.New(diagnostics.UnknownKey, p.source(c, ""), k, c.Labels[k], "",
				"unknown label: the container is not enabled", "did you mean "+prefix+".enable?"))
		}
	}
	return out
}

func sortedFieldNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// chooseNetwork picks the network whose IP Levee dials: the network label,
// else a network Levee's own container shares, else the first by name.
func (p Parser) chooseNetwork(prefix string, c *Container, label string, hasLabel bool) (*Network, []diagnostics.Diagnostic) {
	nets := append([]Network(nil), c.Networks...)
	sort.SliceStable(nets, func(i, j int) bool { return nets[i].Name < nets[j].Name })
	var auto *Network
	for i := range nets {
		for _, own := range p.OwnNetworks {
			if nets[i].Name == own && auto == nil {
				auto = &nets[i]
			}
		}
	}
	if auto == nil && len(nets) > 0 {
		auto = &nets[0]
	}
	var diags []diagnostics.Diagnostic
	if !p.Offline && !c.Remote {
		diags = append(diags, p.noSharedNetwork(prefix, c, nets)...)
	}
	if hasLabel && label != "" {
		for i := range nets {
			if nets[i].Name == label {
				return &nets[i], diags
			}
		}
		fallback, names := "none", make([]string, len(nets))
		if auto != nil {
			fallback = auto.Name
		}
		for i := range nets {
			names[i] = nets[i].Name
		}
		diags = append(diags, diagnostics.New(diagnostics.NetworkNotFound, p.source(c, ""), prefix+".network", label, fallback,
			fmt.Sprintf("network %q is not attached to the container (attached: %s)", label, strings.Join(names, ", ")),
			diagnostics.DidYouMean(label, names)))
	}
	return auto, diags
}

// group merges replicas into entrypoints and chooses ports and addresses.
func (p Parser) group(prefix string, cands []candidate) ([]config.Entrypoint, []diagnostics.Diagnostic) {
	type grp struct {
		key     string
		members []candidate
	}
	var groups []*grp
	byKey := map[string]*grp{}
	for _, cd := range cands {
		k := cd.proto + "\x00" + cd.svc + "\x00" + strings.Join(sortedCopy(cd.cfg.Entrypoint.Hosts), ",")
		g := byKey[k]
		if g == nil {
			g = &grp{key: k}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.members = append(g.members, cd) // cands are oldest-first already
	}

	// IDs: the oldest group of a service name keeps the name; later groups
	// with the same name get the first free "-N" suffix.
	taken := map[string]bool{}
	for _, g := range groups {
		taken[g.members[0].svc] = false
	}
	var eps []config.Entrypoint
	var diags []diagnostics.Diagnostic
	for _, g := range groups {
		win := g.members[0]
		id := win.svc
		if used, ok := taken[id]; ok && used {
			for n := 2; ; n++ {
				cand := win.svc + "-" + strconv.Itoa(n)
				if _, exists := taken[cand]; !exists {
					id = cand
					break
				}
			}
		}
		taken[id] = true

		ep := win.cfg.Entrypoint
		ep.ID, ep.Name, ep.Source, ep.Created = id, win.svc, p.sourceName(), win.c.Created
		if p.sourceName() != config.SourceDocker {
			ep.ID += "@" + p.sourceName()
		}
		ep.Backends = nil
		keyOf := func(field string) string { return prefix + "." + win.proto + "." + win.svc + "." + field }
		for i, m := range g.members {
			src := p.source(m.c, m.svc)
			if i > 0 {
				if differ := differingKeys(win.fields, m.fields); len(differ) > 0 {
					full := make([]string, len(differ))
					for j, f := range differ {
						full[j] = keyOf(f)
					}
					diags = append(diags, diagnostics.New(diagnostics.ReplicasDisagree, src, "", strings.Join(full, ","), "labels of "+win.c.Name,
						fmt.Sprintf("replica labels differ from the oldest replica %s on %s; its labels apply", win.c.Name, strings.Join(differ, ", ")), ""))
				}
			}
			if m.c.Service {
				bs, ds := p.serviceBackends(m, win, keyOf)
				ep.Backends = append(ep.Backends, bs...)
				diags = append(diags, ds...)
				continue
			}
			if m.c.HasHealthcheck && m.c.Health != "healthy" {
				continue // routed again once its HEALTHCHECK reports healthy
			}
			b, ok, ds := p.containerBackend(m, win, keyOf)
			diags = append(diags, ds...)
			if ok {
				ep.Backends = append(ep.Backends, b)
			}
		}
		eps = append(eps, ep)
	}
	return eps, diags
}

// differingKeys names the fields where two replicas' labels differ. Hosts
// are equal as sets by construction of the group, however they are written.
func differingKeys(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if k == "host" {
			continue
		}
		if bv, ok := b[k]; !ok || bv != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && k != "host" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sortedCopy(ss []string) []string {
	out := append([]string(nil), ss...)
	sort.Strings(out)
	return out
}

// isServiceField reports whether name is the label of a service field.
func isServiceField(name string) bool {
	for _, f := range config.Fields() {
		if f.Label == name || slices.Contains(f.LabelAliases, name) {
			return true
		}
	}
	return false
}
