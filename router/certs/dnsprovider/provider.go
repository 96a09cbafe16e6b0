package dnsprovider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/caddyserver/certmagic"
)

// Env is where a provider's credentials come from: the process
// environment and the file system, injected so that tests give their own.
type Env struct {
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
	// AWSCheck resolves route53's credentials at start (nil: the AWS
	// SDK's default chain, awsCheck).
	AWSCheck func(ctx context.Context, c AWSConfig) error
}

// builder makes one provider from env.
type builder func(ctx context.Context, env Env) (certmagic.DNSProvider, error)

// builders is the table of providers, by their --acme-dns-provider name.
var builders = map[string]builder{
	"cloudflare": newCloudflare,
	"route53":    newRoute53,
	"rfc2136":    newRFC2136,
}

// Names are the providers New knows, sorted.
func Names() []string {
	out := make([]string, 0, len(builders))
	for n := range builders {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Known reports whether name is a provider New knows.
func Known(name string) bool { return builders[name] != nil }

// New builds the provider called name from the credentials in env.
func New(ctx context.Context, name string, env Env) (certmagic.DNSProvider, error) {
	b := builders[name]
	if b == nil {
		return nil, fmt.Errorf("DNS provider %q: want one of %s", name, strings.Join(Names(), ", "))
	}
	p, err := b(ctx, env)
	if err != nil {
		return nil, fmt.Errorf("DNS provider %s: %w", name, err)
	}
	return p, nil
}

// errMissing is a required variable that is unset.
var errMissing = errors.New("not set")

// secret is the variable name's value, or the content of the file
// name_FILE names, trailing white space removed. Both set, an unreadable
// or an empty file are errors naming the variable; neither set is "".
func (e Env) secret(name string) (string, error) {
	v := e.Getenv(name)
	file := e.Getenv(name + "_FILE")
	switch {
	case file == "":
		return v, nil
	case v != "":
		return "", fmt.Errorf("%s and %s are both set: give one", name, name+"_FILE")
	}
	b, err := e.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", name+"_FILE", file, err)
	}
	s := strings.TrimRight(string(b), " \t\r\n")
	if s == "" {
		return "", fmt.Errorf("%s=%s: the file is empty", name+"_FILE", file)
	}
	return s, nil
}

// required is secret for a variable that must be given.
func (e Env) required(name string) (string, error) {
	v, err := e.secret(name)
	if err == nil && v == "" {
		err = fmt.Errorf("%s (or %s): %w", name, name+"_FILE", errMissing)
	}
	return v, err
}
