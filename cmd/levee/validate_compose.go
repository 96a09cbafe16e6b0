package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"

	"github.com/levee-proxy/levee/provider/labels"
)

// composeInput says what to load: the files (several -f, "-" for standard
// input), the env files and profiles, and where to look variables up.
type composeInput struct {
	files    []string
	envFiles []string
	profiles []string
	stdin    io.Reader
	getenv   func(string) string
}

// composeObjects are what a compose project gives the two label readers:
// each service's `labels` as a container (the docker provider reads those),
// and each service's `deploy.labels` as a Swarm service (the swarm provider
// reads those, once the file is deployed with `docker stack deploy`).
type composeObjects struct {
	containers []labels.Container
	services   []labels.Container
	// images are the services' images by object name, for the ports
	// the images EXPOSE (fillExposedPorts).
	images map[string]string
	// unset are required variables (${VAR:?…}) without a value: the
	// values that use them were kept as written.
	unset []string
}

// readCompose loads a compose project the way Docker Compose does, through
// compose-go (the library Docker Compose itself uses): variable
// interpolation with defaults (${HOST:-app.example.com}), x- extensions,
// YAML anchors and merge keys, extends, profiles, .env and --env-file,
// several files merged in order, "-" for standard input. Variables are
// looked up in the environment first, then in the env files (an empty
// variable counts as unset).
func readCompose(ctx context.Context, in composeInput) (composeObjects, error) {
	details, order, err := composeDetails(in)
	if err != nil {
		return composeObjects{}, err
	}
	env, err := envFileValues(details.WorkingDir, in)
	if err != nil {
		return composeObjects{}, err
	}
	details.Environment = env
	lookup := func(key string) (string, bool) {
		if v := in.getenv(key); v != "" {
			return v, true
		}
		v, ok := env[key]
		return v, ok
	}
	var unset []string
	project, err := loader.LoadWithContext(ctx, details, func(o *loader.Options) {
		o.Interpolate.LookupValue = lookup
		o.Interpolate.Substitute = func(s string, m template.Mapping) (string, error) {
			out, err := template.Substitute(s, m)
			// A required variable (${TOKEN:?set it}) that is unset fails
			// `docker compose up`, but validate judges labels: the value
			// is checked as written, and the caller says so.
			var req *template.MissingRequiredError
			if errors.As(err, &req) {
				if !slices.Contains(unset, req.Variable) {
					unset = append(unset, req.Variable)
				}
				return s, nil
			}
			return out, err
		}
		o.Profiles = in.profiles
		o.SetProjectName(loader.NormalizeProjectName(filepath.Base(details.WorkingDir)), false)
		// validate judges labels: a service without an image (built
		// elsewhere) is not its concern.
		o.SkipConsistencyCheck = true
		o.SkipResolveEnvironment = true
	})
	if err != nil {
		return composeObjects{}, fmt.Errorf("load compose files %s: %w", strings.Join(in.files, ", "), err)
	}
	objs := projectObjects(project, order)
	objs.unset = unset
	return objs, nil
}

// composeDetails reads every file (standard input for "-") and notes the
// order in which services first appear, so that the report follows the
// files. The working directory is that of the first file on disk, as for
// Docker Compose.
func composeDetails(in composeInput) (types.ConfigDetails, []string, error) {
	var details types.ConfigDetails
	var order []string
	stdinRead := false
	for _, path := range in.files {
		var data []byte
		var err error
		if path == "-" {
			if stdinRead {
				return details, nil, errors.New("standard input (-) can be given only once")
			}
			stdinRead = true
			if data, err = io.ReadAll(in.stdin); err != nil {
				return details, nil, fmt.Errorf("read compose file from standard input: %w", err)
			}
		} else {
			if data, err = os.ReadFile(path); err != nil {
				return details, nil, fmt.Errorf("read compose file: %w", err)
			}
			if details.WorkingDir == "" {
				abs, err := filepath.Abs(path)
				if err != nil {
					return details, nil, fmt.Errorf("compose file %s: %w", path, err)
				}
				details.WorkingDir = filepath.Dir(abs)
			}
		}
		name := path
		if path == "-" {
			// compose-go names standard input so; a relative path
			// would be resolved against the working directory.
			name = "-"
		}
		details.ConfigFiles = append(details.ConfigFiles, types.ConfigFile{Filename: name, Content: data})
		for _, s := range serviceOrder(data) {
			if !slices.Contains(order, s) {
				order = append(order, s)
			}
		}
	}
	if details.WorkingDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return details, nil, err
		}
		details.WorkingDir = wd
	}
	return details, order, nil
}

// envFileValues reads the env files: --env-file as given, else .env in the
// working directory when there is one. References inside them resolve
// against the environment.
func envFileValues(wd string, in composeInput) (map[string]string, error) {
	files := in.envFiles
	if len(files) == 0 {
		def := filepath.Join(wd, ".env")
		if st, err := os.Stat(def); err == nil && !st.IsDir() {
			files = []string{def}
		}
	}
	if len(files) == 0 {
		return map[string]string{}, nil
	}
	env, err := dotenv.ReadWithLookup(func(k string) (string, bool) {
		v := in.getenv(k)
		return v, v != ""
	}, files...)
	if err != nil {
		return nil, fmt.Errorf("read env file: %w", err)
	}
	return env, nil
}

// serviceOrder lists the service names of one file in file order; a file
// that does not parse here is left to compose-go to report.
func serviceOrder(data []byte) []string {
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil || len(root.Content) == 0 {
		return nil
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "services" || doc.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		var out []string
		svcs := doc.Content[i+1]
		for j := 0; j+1 < len(svcs.Content); j += 2 {
			out = append(out, svcs.Content[j].Value)
		}
		return out
	}
	return nil
}

// projectObjects turns the loaded project into label objects, in file
// order (services the files do not name, from extends or include, after
// them by name). Creation times follow that order, so "the oldest replica
// wins" means "the first service in the file".
func projectObjects(p *types.Project, order []string) composeObjects {
	var names []string
	for _, n := range order {
		if _, ok := p.Services[n]; ok {
			names = append(names, n)
		}
	}
	var rest []string
	for n := range p.Services {
		if !slices.Contains(names, n) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)

	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	out := composeObjects{images: map[string]string{}}
	for i, name := range names {
		s := p.Services[name]
		created := base.Add(time.Duration(i) * time.Second)
		targets := targetPorts(s.Ports)
		cname := s.ContainerName
		if cname == "" {
			cname = name
		}
		exposed := append(exposedPorts(s.Expose), targets...)
		out.images[cname], out.images[name] = s.Image, s.Image
		out.containers = append(out.containers, labels.Container{ID: name, Name: cname, Created: created,
			Labels: copyLabels(s.Labels), ExposedPorts: exposed})
		if s.Deploy != nil && len(s.Deploy.Labels) > 0 {
			out.services = append(out.services, labels.Container{ID: name, Name: name, Created: created,
				Labels: copyLabels(s.Deploy.Labels), ExposedPorts: targets, Service: true})
		}
	}
	return out
}

func copyLabels(l types.Labels) map[string]string {
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// exposedPorts reads `expose` items: "3000", "3000-3002", "3000/tcp".
func exposedPorts(items types.StringOrNumberList) []int {
	var out []int
	for _, it := range items {
		out = append(out, portRange(it)...)
	}
	return out
}

// targetPorts reads the container side of `ports` (TCP only).
func targetPorts(ports []types.ServicePortConfig) []int {
	var out []int
	for _, p := range ports {
		if p.Protocol != "" && p.Protocol != "tcp" {
			continue
		}
		if p.Target >= 1 && p.Target <= 65535 {
			out = append(out, int(p.Target))
		}
	}
	return out
}

func portRange(s string) []int {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "/")
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := strconv.Atoi(lo)
	if err != nil || a < 1 || a > 65535 {
		return nil
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(hi); err != nil || b < a || b > 65535 || b-a > 1000 {
			return []int{a}
		}
	}
	out := make([]int, 0, b-a+1)
	for p := a; p <= b; p++ {
		out = append(out, p)
	}
	return out
}

// fillExposedPorts gives the objects that publish and expose no port in
// the compose file the ports their image EXPOSEs, read from the engine by
// lookup, so that the port rule chooses as levee serve will (the only
// exposed port, else the lowest). Without an engine, or without the image
// on it, they keep none and the port rule says the EXPOSE is not known.
func fillExposedPorts(ctx context.Context, objs *composeObjects, lookup func(ctx context.Context, images []string) (map[string][]int, error)) {
	var want []string
	for _, list := range [][]labels.Container{objs.containers, objs.services} {
		for _, c := range list {
			if img := objs.images[c.Name]; len(c.ExposedPorts) == 0 && img != "" && !slices.Contains(want, img) {
				want = append(want, img)
			}
		}
	}
	if len(want) == 0 || lookup == nil {
		return
	}
	ports, err := lookup(ctx, want)
	if err != nil {
		return // no engine: offline it is
	}
	for _, list := range [][]labels.Container{objs.containers, objs.services} {
		for i := range list {
			if len(list[i].ExposedPorts) == 0 {
				list[i].ExposedPorts = slices.Clone(ports[objs.images[list[i].Name]])
			}
		}
	}
}
