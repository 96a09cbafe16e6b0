package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// durationValue is a duration flag read as labels read durations
// (config.ParseDuration): whole seconds ("5") or a Go duration ("250ms").
type durationValue struct{ p *time.Duration }

func (d durationValue) Set(s string) error {
	v, err := config.ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

func (d durationValue) String() string {
	if d.p == nil {
		return "0s"
	}
	return d.p.String()
}

// Get implements flag.Getter.
func (d durationValue) Get() any { return *d.p }

// durationVar defines a duration flag that also takes bare seconds.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}

// parseFlags parses args into fs without the flag package's own output: a
// mistake is one error naming the flag, with a did-you-mean among fs's
// flags (diagnostics.DidYouMean, as for labels) and where the flags are
// listed, never the whole list; --help prints usage to out and returns
// flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string, out io.Writer, usage func(io.Writer)) error {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(out)
		usage(out)
		return err
	}
	return flagError(fs, err)
}

// flagError rewrites the flag package's error: "flag provided but not
// defined: -x" gains a did-you-mean, and every error says where the flags
// are listed.
func flagError(fs *flag.FlagSet, err error) error {
	help := fmt.Sprintf("%s --help lists the flags", fs.Name())
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		return fmt.Errorf("%w (%s)", err, help)
	}
	name = strings.TrimPrefix(name, "-")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	if best, ok := diagnostics.Closest(name, names); ok {
		return fmt.Errorf("unknown flag --%s: did you mean --%s? (%s)", name, best, help)
	}
	return fmt.Errorf("unknown flag --%s (%s)", name, help)
}

// flagGroup is one section of serve's usage: the flags named, and those
// whose name starts with one of prefixes.
type flagGroup struct {
	title    string
	names    []string
	prefixes []string
}

// serveFlagGroups orders serve's usage by what a flag configures. A flag
// in none of them is listed under "Other".
var serveFlagGroups = []flagGroup{
	{title: "Listeners", names: []string{"http-listen", "listen", "http-server", "max-client-conns", "upgrade-protocols", "trusted-proxies"}},
	{title: "TLS and ACME", names: []string{"cert-dir"}, prefixes: []string{"tls-", "acme-"}},
	{title: "Request rules", names: []string{"strict-paths", "underscore-headers"}},
	{title: "Policies", names: []string{"compress-memory", "error-pages-dir", "sticky-secret", "rate-limit-flush-interval"}},
	{title: "Client timeouts and shutdown", names: []string{"request-body-timeout", "request-body-min-rate", "response-write-timeout", "tunnel-idle-timeout", "shutdown-timeout"}},
	{title: "Backends", names: []string{"backend-client", "dial-timeout", "idle-conn-timeout", "backend-body-timeout", "route-grace", "tcp-splice"}},
	{title: "Docker and Swarm", names: []string{"label-prefix"}, prefixes: []string{"docker", "swarm"}},
	{title: "Config files", prefixes: []string{"config-"}},
	{title: "Kubernetes", names: []string{"kubernetes"}, prefixes: []string{"kubernetes-"}},
	{title: "Breakers and fleet", prefixes: []string{"breaker-"}},
	{title: "API", names: []string{"state-file"}, prefixes: []string{"api-"}},
	{title: "Logging and metrics", names: []string{"access-log"}, prefixes: []string{"access-log-", "log-", "metrics-"}},
	{title: "Metrics over OTLP", names: []string{"metrics-otlp-endpoint", "metrics-otlp-protocol", "metrics-otlp-interval", "metrics-otlp-insecure"}},
	{title: "Tracing", prefixes: []string{"tracing-"}},
	{title: "Runtime", names: []string{"gc-heap-floor"}},
}

// groupOf returns the title of the group flag name is listed in.
func groupOf(groups []flagGroup, name string) string {
	for _, g := range groups {
		for _, n := range g.names {
			if n == name {
				return g.title
			}
		}
	}
	for _, g := range groups {
		for _, p := range g.prefixes {
			if strings.HasPrefix(name, p) {
				return g.title
			}
		}
	}
	return "Other"
}

// printGroupedFlags writes fs's flags by group, each with its LEVEE_*
// variable and default.
func printGroupedFlags(w io.Writer, fs *flag.FlagSet, groups []flagGroup) {
	byGroup := map[string][]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) {
		g := groupOf(groups, f.Name)
		byGroup[g] = append(byGroup[g], f)
	})
	titles := make([]string, 0, len(groups)+1)
	for _, g := range groups {
		titles = append(titles, g.title)
	}
	for _, title := range append(titles, "Other") {
		flags := byGroup[title]
		if len(flags) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", title)
		for _, f := range flags {
			kind, usage := flag.UnquoteUsage(f)
			if _, isDuration := f.Value.(durationValue); isDuration {
				kind = "duration"
			}
			head := "  --" + f.Name
			if kind != "" {
				head += " " + kind
			}
			fmt.Fprintf(w, "%s  (%s", head, envName(f.Name))
			if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
				fmt.Fprintf(w, ", default %s", f.DefValue)
			}
			fmt.Fprintf(w, ")\n      %s\n", usage)
		}
	}
}
