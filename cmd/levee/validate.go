package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/provider/constraint"
	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/config"
)

// engineReader is what `levee validate` reads of a live Docker engine at
// host. A nil function is a reader this run does not have.
type engineReader struct {
	// listContainers is the Docker provider's own list+inspect, so that
	// validate without files sees exactly what serve would.
	// Each reads the engine of one host, with its TLS client certificates.
	listContainers func(ctx context.Context, spec docker.HostSpec) ([]labels.Container, error)
	// listServices reads the Swarm services (none when not a manager).
	listServices func(ctx context.Context, spec docker.HostSpec) ([]labels.Container, error)
	// imageExposedPorts reads the ports images EXPOSE, for compose
	// services without ports.
	imageExposedPorts func(ctx context.Context, host string, images []string) (map[string][]int, error)
}

// liveEngine reads the engine through the Docker provider.
func liveEngine() engineReader {
	return engineReader{listContainers: docker.ListContainers, listServices: docker.ListServices, imageExposedPorts: docker.ImageExposedPorts}
}

// Statuses of a service in a validate report.
const (
	statusRouted   = "routed"   // routed with no warning
	statusDegraded = "degraded" // routed, some field fell back
	statusDenies   = "denies"   // routed, but denies every request (an access policy Levee cannot read)
	statusSkipped  = "skipped"  // not routed
	statusIgnored  = "ignored"  // container not enabled: not an error
)

// serviceReport is one row of `levee validate`: one label service of one
// container.
type serviceReport struct {
	// Provider reads the labels: docker (a container's labels) or swarm
	// (a Swarm service's labels: deploy.labels in a compose file).
	Provider    string                   `json:"provider"`
	Container   string                   `json:"container"`
	Service     string                   `json:"service,omitempty"`
	Entrypoint  string                   `json:"entrypoint,omitempty"`
	Status      string                   `json:"status"`
	Hosts       []string                 `json:"hosts,omitempty"`
	Backend     string                   `json:"backend,omitempty"`
	Diagnostics []diagnostics.Diagnostic `json:"diagnostics"`
}

type validateReport struct {
	Services []serviceReport `json:"services"`
	// Swarm is set when some row comes from deploy.labels.
	Swarm   bool           `json:"swarm,omitempty"`
	Summary map[string]int `json:"summary"`
	// Hint suggests another label prefix when nothing was enabled under
	// the given one but other containers carry a label grammar like ours.
	Hint string `json:"hint,omitempty"`
}

const validateUsage = `Usage: levee validate [flags] [FILE...]

Checks the labels of compose FILEs (or, with no file, of the live engine's
containers, and of its Swarm services when it is a Swarm manager; or of
several Docker hosts, --docker-host name=url repeated as for serve, their
containers merged as serve merges them and named host/container) with the
same parser and validator as levee serve, and prints
per service: routed, degraded (routed, some field fell back), denies
(routed, but denies every request: an access policy it names cannot be
read) or skipped (not routed), with its diagnostics (see levee explain
CODE).

Compose files are read as Docker Compose reads them: variables
(${HOST:-default}) from the environment, then --env-file or .env; anchors,
merge keys, x- extensions, extends, profiles (--profile); several files
(-f a.yml -f b.yml, or as arguments) merged in order; - for standard input.
A service's labels are container labels, read by the docker provider
(levee serve); its deploy.labels are Swarm service labels, read by the
swarm provider (levee serve --swarm); rows marked [swarm] are those.
Given serve's listeners (--listen, --http-listen), routes are checked
against them too (W046, W047). A service without a port label, ports or
expose gets the ports its image EXPOSEs from the engine (--docker-host),
when it is reachable and has the image, as levee serve would.

With --config-dir or --config-file, the config files of levee serve's file
provider are checked too (rows marked [file]: the file, then the
entrypoint), with the diagnostics serve would give them; without a compose
file, only they are (the engine is not read). A file that does not parse
(W037, with its line) or cannot be read (W026) is a skipped row.

Exit status (for CI):
  0  no diagnostic is an error: every service is routed as written, or
     with fields that fell back to their defaults (warnings)
  1  some diagnostic is an error: a service is skipped (not routed), or a
     route denies every request because an access policy cannot be read
     (E005, E006); with --strict, also any warning
  2  usage error, or nothing could be read

Flags:
`

// runValidate implements `levee validate`.
// Flags not given fall back to the same LEVEE_* variables as serve, so a
// validate run in serve's environment judges labels exactly as serve would.
func runValidate(ctx context.Context, eng engineReader, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("levee validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	prefix := fs.String("label-prefix", labels.DefaultPrefix, "label prefix (use \"sozune\" for compose files written for Sōzune)")
	format := fs.String("format", "text", "output format: text or json")
	var hostSpecs []docker.HostSpec
	var tlsDirs, hostAddrs map[string]string
	var hostWeights map[string]int
	fs.Var(dockerHostFlag{&hostSpecs}, "docker-host", "Docker engine address for the live check, [name=]url as levee serve takes it; repeat it, each with a name, to check several hosts as one (default: DOCKER_HOST, else the local socket)")
	fs.Var(dockerTLSDirFlag{&tlsDirs}, "docker-tls-dir", "a Docker host's TLS client certificates, [name=]dir holding ca.pem, cert.pem, key.pem (repeatable)")
	fs.Var(dockerHostWeightFlag{&hostWeights}, "docker-host-weight", "weight of a Docker host's replicas, name=weight (1-100), as levee serve takes it (repeatable)")
	fs.Var(dockerHostAddrFlag{&hostAddrs}, "docker-host-address", "where a Docker host's published ports are dialled, name=addr, as levee serve takes it (repeatable)")
	byDefault := fs.Bool("docker-exposed-by-default", false, "route containers without <prefix>.enable=true")
	var constraints *constraint.Expr
	fs.Var(constraintFlag{&constraints}, "docker-constraints", dockerConstraintsUsage)
	var fileFlags, envFiles, profiles listFlag
	fs.Var(&fileFlags, "f", "compose file (repeatable; - for standard input); files may also be given as arguments")
	fs.Var(&envFiles, "env-file", "env file for interpolation (repeatable; default: .env beside the first file)")
	fs.Var(&profiles, "profile", "compose profile to enable (repeatable)")
	var listen []listenerSpec
	fs.Var(listenFlag{&listen}, "listen", "levee serve's --listen (repeatable): given, it or --http-listen checks the routes against serve's listeners (W046, W047)")
	httpListen := fs.String("http-listen", ":8080", "levee serve's --http-listen, when serve is given it")
	pagesDir := fs.String("error-pages-dir", "", "levee serve's --error-pages-dir: the error-page files (errors.file) are read from it as serve would (W088, W089)")
	var configDirs, configFiles []string
	fs.Var(pathsFlag{&configDirs}, "config-dir", "directory of config files, as levee serve --config-dir reads it (repeatable); checked instead of the live engine when no compose file is given")
	fs.Var(pathsFlag{&configFiles}, "config-file", "one config file, as levee serve --config-file reads it (repeatable)")
	strict := fs.Bool("strict", false, "exit 1 on warnings too (a field that fell back to its default), not only on errors")
	usage := func(w io.Writer) {
		fmt.Fprint(w, validateUsage)
		fs.PrintDefaults()
	}
	files, err := parseInterspersed(fs, args, stderr, usage)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "levee validate: %v\n", err)
		return 2
	}
	if err := applyEnv(fs, getenv); err != nil {
		fmt.Fprintf(stderr, "levee validate: %v\n", err)
		return 2
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "levee validate: --format %q: want text or json\n", *format)
		return 2
	}
	if *prefix == "" || strings.ContainsAny(*prefix, ". =") {
		fmt.Fprintf(stderr, "levee validate: --label-prefix %q: want a non-empty word without dots, spaces or '='\n", *prefix)
		return 2
	}

	hosts, err := docker.ResolveHosts(hostSpecs, tlsDirs, hostAddrs)
	if err == nil {
		hosts, err = docker.ApplyHostWeights(hosts, hostWeights)
	}
	if err != nil {
		fmt.Fprintf(stderr, "levee validate: %v\n", err)
		return 2
	}
	host := ""
	if len(hosts) > 0 {
		host = hosts[0].URL
	}

	listeners, err := validateListeners(fs, getenv, listen, *httpListen)
	if err != nil {
		fmt.Fprintf(stderr, "levee validate: %v\n", err)
		return 2
	}

	files = append(append([]string(nil), fileFlags...), files...)
	parser := labels.Parser{Prefix: *prefix, ExposedByDefault: *byDefault, Constraint: constraints}
	var rep validateReport
	if len(files) > 0 {
		objs, err := readCompose(ctx, composeInput{files: files, envFiles: envFiles, profiles: profiles, stdin: stdin, getenv: getenv})
		if err != nil {
			fmt.Fprintf(stderr, "levee validate: %v\n", err)
			return 2
		}
		for _, v := range objs.unset {
			fmt.Fprintf(stderr, "levee validate: note: required variable %s is not set; values that use it are checked as written\n", v)
		}
		parser.Offline = true
		if eng.imageExposedPorts != nil {
			fillExposedPorts(ctx, &objs, func(ctx context.Context, images []string) (map[string][]int, error) {
				return eng.imageExposedPorts(ctx, host, images)
			})
		}
		rep = reportBoth(parser, constrained(objs, constraints, stderr), listeners, *pagesDir)
	} else if len(configDirs) > 0 || len(configFiles) > 0 {
		// Config files only: nothing of the engine is read.
		if len(envFiles) > 0 || len(profiles) > 0 {
			fmt.Fprintln(stderr, "levee validate: --env-file and --profile apply to compose files; none given")
			return 2
		}
	} else {
		if len(envFiles) > 0 || len(profiles) > 0 {
			fmt.Fprintln(stderr, "levee validate: --env-file and --profile apply to compose files; none given")
			return 2
		}
		if eng.listContainers == nil {
			fmt.Fprintln(stderr, "levee validate: no compose file given, and this build cannot read the live Docker engine; pass compose files: levee validate docker-compose.yml")
			return 2
		}
		containers, services, err := readEngines(ctx, eng, hosts)
		if err != nil {
			fmt.Fprintf(stderr, "levee validate: %v\n", err)
			return 2
		}
		rep = reportBoth(parser, constrained(composeObjects{containers: containers, services: services}, constraints, stderr), listeners, *pagesDir)
		if rep.Summary[statusRouted]+rep.Summary[statusDegraded]+rep.Summary[statusDenies]+rep.Summary[statusSkipped] == 0 {
			rep.Hint = prefixHint(containers, *prefix)
		}
	}
	if len(configDirs) > 0 || len(configFiles) > 0 {
		addRows(&rep, fileRows(configDirs, configFiles, listeners, *pagesDir))
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "levee validate: write report: %v\n", err)
			return 2
		}
	} else {
		writeText(stdout, rep)
	}
	return validateExit(rep, *strict)
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// validateListeners returns levee serve's listeners as --listen and
// --http-listen (or their LEVEE_* variables) declare them, or nil when
// neither is given: validate then does not judge listeners, since serve's
// own flags are often elsewhere (a compose file's command).
func validateListeners(fs *flag.FlagSet, getenv func(string) string, listen []listenerSpec, httpListen string) ([]*router.Listener, error) {
	httpGiven := flagGiven(fs, getenv, "http-listen")
	if len(listen) == 0 && !httpGiven {
		return nil, nil
	}
	specs, err := serveConfig{Listen: listen, HTTPListen: httpListen, httpListenGiven: httpGiven}.listeners()
	if err != nil {
		return nil, err
	}
	return routerListeners(specs), nil
}

// resolveComposePolicies applies the named policies the objects declare
// (levee.policy.*) to their routes, as the router does: the policies'
// own diagnostics join ds, the references' (E007) come back as route
// diagnostics. Policies declared elsewhere (the API, files) are not known
// here: a route that uses one is reported E007.
func resolveComposePolicies(p labels.Parser, objs []labels.Container, eps []config.Entrypoint, ds []diagnostics.Diagnostic) ([]config.Entrypoint, []diagnostics.Diagnostic, []diagnostics.Diagnostic) {
	pols, pds := p.ParsePolicies(objs)
	set, cds := config.NewPolicySet(pols)
	ds = append(append(ds, pds...), cds...)
	var rds []diagnostics.Diagnostic
	for i := range eps {
		var refs []diagnostics.Diagnostic
		eps[i], refs = set.Resolve(eps[i])
		rds = append(rds, refs...)
	}
	return eps, ds, rds
}

// reportBoth checks a compose project's labels as container labels (docker
// provider) and its deploy.labels as Swarm service labels (swarm
// provider), and joins the two reports: containers first, then services.
// With listeners, the routes are also checked against them (W046, W047);
// the backend TLS files of scheme=https and scheme=h2 routes are read (W005),
// and the error-page files inside pagesDir (W088, W089).
func reportBoth(parser labels.Parser, objs composeObjects, listeners []*router.Listener, pagesDir string) validateReport {
	parse := func(p labels.Parser, objs []labels.Container) ([]config.Entrypoint, []diagnostics.Diagnostic, []diagnostics.Diagnostic) {
		eps, ds := p.Parse(objs)
		eps, ds, rds := resolveComposePolicies(p, objs, eps, ds)
		rds = append(rds, router.BackendTLSDiagnostics(eps)...)
		rds = append(rds, router.ErrorPageDiagnostics(eps, pagesDir)...)
		if listeners == nil {
			return eps, ds, rds
		}
		return eps, ds, append(router.ListenerDiagnostics(eps, listeners), rds...)
	}
	parser.Source = config.SourceDocker
	eps, ds, lds := parse(parser, objs.containers)
	rep := buildReport(config.SourceDocker, objs.containers, eps, ds, lds)
	if len(objs.services) > 0 {
		sp := parser
		sp.Source = config.SourceSwarm
		eps, ds, lds := parse(sp, objs.services)
		srep := buildReport(config.SourceSwarm, objs.services, eps, ds, lds)
		swarmRows := map[string]bool{}
		for _, r := range srep.Services {
			if r.Status == statusIgnored {
				// deploy.labels without Levee's: nothing to say.
				continue
			}
			rep.Services = append(rep.Services, r)
			rep.Summary[r.Status]++
			rep.Swarm = true
			swarmRows[r.Container] = true
		}
		// A service labelled only under deploy is not also a container
		// "not enabled".
		kept := rep.Services[:0]
		for _, r := range rep.Services {
			if r.Provider == config.SourceDocker && r.Status == statusIgnored && swarmRows[r.Container] {
				rep.Summary[statusIgnored]--
				continue
			}
			kept = append(kept, r)
		}
		rep.Services = kept
	}
	if rep.Summary[statusRouted]+rep.Summary[statusDegraded]+rep.Summary[statusDenies]+rep.Summary[statusSkipped] == 0 {
		rep.Hint = prefixHint(append(append([]labels.Container(nil), objs.containers...), objs.services...), parser.Prefix)
	}
	return rep
}

// parseInterspersed parses flags that may come after file names
// (`levee validate compose.yml --label-prefix sozune`).
func parseInterspersed(fs *flag.FlagSet, args []string, out io.Writer, usage func(io.Writer)) ([]string, error) {
	var rest []string
	for {
		if err := parseFlags(fs, args, out, usage); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return rest, nil
		}
		if args[0] == "--" {
			return append(rest, args[1:]...), nil
		}
		rest = append(rest, args[0])
		args = args[1:]
	}
}

type rowKey struct{ container, service string }

// buildReport turns the parser's output into one row per (container,
// service). Diagnostics about a whole container (Service "") go to each of
// its rows; those about an entrypoint (routeDiags, by entrypoint ID) to
// each row of the entrypoint.
func buildReport(provider string, containers []labels.Container, eps []config.Entrypoint, ds, routeDiags []diagnostics.Diagnostic) validateReport {
	order := map[string]int{}
	for i, c := range containers {
		order[hostQualified(c.Host, c.Name)] = i
	}
	rows := map[rowKey]*serviceReport{}
	row := func(container, service string) *serviceReport {
		k := rowKey{container, service}
		if rows[k] == nil {
			rows[k] = &serviceReport{Provider: provider, Container: container, Service: service, Diagnostics: []diagnostics.Diagnostic{}}
		}
		return rows[k]
	}
	// A live Swarm service's backends are its tasks: its row is the
	// service's, with every task's address.
	taskOf := map[string]string{}
	for _, c := range containers {
		for _, t := range c.Tasks {
			taskOf[t.Name] = c.Name
		}
	}
	for _, ep := range eps {
		for _, b := range ep.Backends {
			name, addr := hostQualified(b.Host, b.Name), fmt.Sprintf("%s:%d", b.Address, b.Port)
			if svc, ok := taskOf[b.Name]; ok {
				name = svc
			}
			r := row(name, ep.Name)
			r.Entrypoint, r.Hosts = ep.ID, ep.Hosts
			if r.Backend != "" && r.Backend != addr {
				addr = r.Backend + ", " + addr
			}
			r.Backend = addr
		}
	}
	var containerLevel []diagnostics.Diagnostic
	for _, d := range ds {
		if d.Source.Service == "" {
			containerLevel = append(containerLevel, d)
			continue
		}
		r := row(d.Source.ObjectName, d.Source.Service)
		r.Diagnostics = append(r.Diagnostics, d)
	}
	for _, d := range containerLevel {
		attached := false
		for k, r := range rows {
			if k.container == d.Source.ObjectName && k.service != "" {
				r.Diagnostics = append(r.Diagnostics, d)
				attached = true
			}
		}
		if !attached {
			r := row(d.Source.ObjectName, "")
			r.Diagnostics = append(r.Diagnostics, d)
		}
	}
	for _, d := range routeDiags {
		for _, r := range rows {
			if r.Entrypoint == d.Source.ObjectID {
				r.Diagnostics = append(r.Diagnostics, d)
			}
		}
	}
	for _, c := range containers {
		name, has := hostQualified(c.Host, c.Name), false
		for k := range rows {
			if k.container == name {
				has = true
				break
			}
		}
		if !has {
			row(name, "").Status = statusIgnored
		}
	}

	rep := validateReport{Summary: map[string]int{statusRouted: 0, statusDegraded: 0, statusDenies: 0, statusSkipped: 0, statusIgnored: 0}}
	for _, r := range rows {
		if r.Status == "" {
			r.Status = statusOf(r)
		}
		diagnostics.Sort(r.Diagnostics)
		rep.Summary[r.Status]++
		rep.Services = append(rep.Services, *r)
	}
	sort.Slice(rep.Services, func(i, j int) bool {
		a, b := rep.Services[i], rep.Services[j]
		if order[a.Container] != order[b.Container] {
			return order[a.Container] < order[b.Container]
		}
		if a.Container != b.Container {
			return a.Container < b.Container
		}
		return a.Service < b.Service
	})
	return rep
}

// hostQualified names a container of one of several Docker hosts as its
// diagnostics do, host/container; a container of the one engine by its name.
func hostQualified(host, name string) string {
	if host == "" {
		return name
	}
	return host + "/" + name
}

// prefixHint looks for containers labelled with another prefix in Levee's
// grammar (<p>.enable, <p>.http.<service>.<field>): the usual reason for a
// compose file that validates to nothing is a Sōzune file checked without
// --label-prefix sozune. Traefik's prefix is never suggested.
func prefixHint(containers []labels.Container, prefix string) string {
	count := map[string]int{}
	for _, c := range containers {
		seen := map[string]bool{}
		for k := range c.Labels {
			p, rest, ok := strings.Cut(k, ".")
			// Traefik's labels are not Levee's grammar under another
			// prefix: I003 points those containers to docs/migrating.md.
			if !ok || p == prefix || p == "traefik" || seen[p] {
				continue
			}
			if rest == "enable" || strings.HasPrefix(rest, "http.") && strings.Count(rest, ".") >= 2 {
				seen[p] = true
				count[p]++
			}
		}
	}
	best, n := "", 0
	for p, c := range count {
		if c > n || c == n && p < best {
			best, n = p, c
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("no container is enabled under the prefix %q, but %d carry %q labels: try --label-prefix %s", prefix, n, best+".*", best)
}
