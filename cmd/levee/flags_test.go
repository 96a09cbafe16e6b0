package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/levee-proxy/levee/router/proxy"
)

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestServeFlagsDefaults(t *testing.T) {
	cfg, err := parseServeFlags(nil, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPListen != ":8080" || cfg.APIListen != "127.0.0.1:3035" || cfg.LabelPrefix != "levee" ||
		cfg.DockerDebounce != 100*time.Millisecond || !cfg.DockerEnabled || cfg.ExposedByDefault {
		t.Fatalf("unexpected defaults: %+v", cfg)
	}
	if cfg.DockerCallTimeout != 10*time.Second || cfg.DockerPingInterval != 15*time.Second || cfg.DockerBackoffMax != 30*time.Second {
		t.Fatalf("docker connection defaults: call timeout %v, ping interval %v, backoff max %v; want 10s, 15s, 30s",
			cfg.DockerCallTimeout, cfg.DockerPingInterval, cfg.DockerBackoffMax)
	}
	// Backends are local containers: a connect is refused at once or never
	// completes, so waiting long only delays the retry elsewhere.
	if cfg.DialTimeout != time.Second {
		t.Fatalf("--dial-timeout default %v, want 1s", cfg.DialTimeout)
	}
	if cfg.RouteLatency {
		t.Fatal("--metrics-route-latency is on by default: per-route histograms are opt-in")
	}
	if cfg.GCHeapFloor != 12 || cfg.gogc != "" {
		t.Fatalf("--gc-heap-floor default %d MiB (GOGC %q), want 12 MiB and no GOGC", cfg.GCHeapFloor, cfg.gogc)
	}
	// GOGC in the environment is the operator's pacing: serve then leaves
	// the floor off.
	cfg, err = parseServeFlags(nil, envOf(map[string]string{"GOGC": "200"}), &bytes.Buffer{})
	if err != nil || cfg.gogc != "200" {
		t.Fatalf("GOGC=200 not recorded: %q, %v", cfg.gogc, err)
	}
}

func TestServeFlagsEnvAndPrecedence(t *testing.T) {
	env := envOf(map[string]string{
		"LEVEE_LABEL_PREFIX":              "sozune",
		"LEVEE_HTTP_LISTEN":               ":9999",
		"LEVEE_DOCKER_EXPOSED_BY_DEFAULT": "true",
		"LEVEE_DOCKER_DEBOUNCE":           "250ms",
		"LEVEE_DOCKER_CALL_TIMEOUT":       "3s",
		"LEVEE_DOCKER_PING_INTERVAL":      "1m",
		"LEVEE_DOCKER_BACKOFF_MAX":        "1m",
		"DOCKER_HOST":                     "tcp://docker.example:2375",
	})
	cfg, err := parseServeFlags([]string{"--http-listen", ":7000", "--docker-backoff-max", "2m"}, env, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPListen != ":7000" || cfg.DockerBackoffMax != 2*time.Minute {
		t.Errorf("flag must win over env: http-listen = %q, docker-backoff-max = %v", cfg.HTTPListen, cfg.DockerBackoffMax)
	}
	if cfg.DockerCallTimeout != 3*time.Second || cfg.DockerPingInterval != time.Minute {
		t.Errorf("env not applied: docker-call-timeout = %v, docker-ping-interval = %v", cfg.DockerCallTimeout, cfg.DockerPingInterval)
	}
	if cfg.LabelPrefix != "sozune" || !cfg.ExposedByDefault || cfg.DockerDebounce != 250*time.Millisecond {
		t.Errorf("env not applied: %+v", cfg)
	}
	if cfg.DockerHost != "tcp://docker.example:2375" {
		t.Errorf("DOCKER_HOST not used as the default docker host: %q", cfg.DockerHost)
	}
	cfg, err = parseServeFlags(nil, envOf(map[string]string{"LEVEE_DOCKER_HOST": "unix:///x.sock", "DOCKER_HOST": "tcp://y:1"}), &bytes.Buffer{})
	if err != nil || cfg.DockerHost != "unix:///x.sock" {
		t.Errorf("LEVEE_DOCKER_HOST must win over DOCKER_HOST: %q, %v", cfg.DockerHost, err)
	}
}

func TestServeFlagsErrorsNameTheInput(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{env: map[string]string{"LEVEE_DOCKER_DEBOUNCE": "soon"}, want: `environment variable LEVEE_DOCKER_DEBOUNCE="soon": invalid duration`},
		{env: map[string]string{"LEVEE_ACCESS_LOG": "maybe"}, want: `environment variable LEVEE_ACCESS_LOG="maybe": invalid boolean`},
		{env: map[string]string{"LEVEE_DIAL_TIMEOUT": "-1s"}, want: "--dial-timeout (LEVEE_DIAL_TIMEOUT) -1s: must be positive"},
		{args: []string{"--log-format", "xml"}, want: `--log-format "xml"`},
		{args: []string{"--label-prefix", "a.b"}, want: `--label-prefix "a.b"`},
		{env: map[string]string{"LEVEE_HTTP_SERVER": "nginx"}, want: `--http-server (LEVEE_HTTP_SERVER) "nginx": want levee or stdlib`},
		{args: []string{"--dial-timeout", "0s"}, want: "--dial-timeout (LEVEE_DIAL_TIMEOUT) 0s: must be positive"},
		{env: map[string]string{"LEVEE_DOCKER_CALL_TIMEOUT": "0s"}, want: "--docker-call-timeout (LEVEE_DOCKER_CALL_TIMEOUT) 0s: must be positive"},
		{env: map[string]string{"LEVEE_DOCKER_PING_INTERVAL": "soon"}, want: `environment variable LEVEE_DOCKER_PING_INTERVAL="soon": invalid duration`},
		{args: []string{"--docker-ping-interval", "-1s"}, want: "--docker-ping-interval (LEVEE_DOCKER_PING_INTERVAL) -1s: must be positive"},
		{args: []string{"--docker-backoff-max", "100ms"}, want: "--docker-backoff-max (LEVEE_DOCKER_BACKOFF_MAX) 100ms: must be at least 250ms"},
		{args: []string{"extra"}, want: `unexpected argument "extra"`},
		{args: []string{"--gc-heap-floor", "-1"}, want: "--gc-heap-floor (LEVEE_GC_HEAP_FLOOR) -1: want MiB from 0 (off) to 1048576"},
		{env: map[string]string{"LEVEE_GC_HEAP_FLOOR": "16MiB"}, want: `environment variable LEVEE_GC_HEAP_FLOOR="16MiB"`},
		{args: []string{"--swarm-poll", "0s"}, want: "--swarm-poll (LEVEE_SWARM_POLL) 0s: must be positive"},
		{args: []string{"--trusted-proxies", "10.0.0.0/8, lb.example"}, want: `"lb.example" is neither an IP address nor a CIDR prefix`},
		{args: []string{"--api-hosts", "levee.lan, http://levee.lan"}, want: `--api-hosts (LEVEE_API_HOSTS): API host "http://levee.lan": want a host name or address`},
		{env: map[string]string{"LEVEE_API_HOSTS": "levee.lan/api"}, want: `--api-hosts (LEVEE_API_HOSTS): API host "levee.lan/api"`},
		{env: map[string]string{"LEVEE_UNDERSCORE_HEADERS": "allow"}, want: `--underscore-headers (LEVEE_UNDERSCORE_HEADERS) "allow": want delete, keep or reject`},
	}
	for _, c := range cases {
		_, err := parseServeFlags(c.args, envOf(c.env), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("args %v env %v: error %v, want it to mention %s", c.args, c.env, err, c.want)
		}
	}
}

func TestServeFlagsSwarm(t *testing.T) {
	cfg, err := parseServeFlags(nil, envOf(nil), &bytes.Buffer{})
	if err != nil || cfg.SwarmEnabled || !cfg.DockerEnabled || cfg.SwarmPoll != 5*time.Second {
		t.Fatalf("defaults: swarm %v docker %v poll %v (%v); want swarm off beside docker, 5s", cfg.SwarmEnabled, cfg.DockerEnabled, cfg.SwarmPoll, err)
	}
	cfg, err = parseServeFlags([]string{"--swarm", "--docker=false"}, envOf(map[string]string{"LEVEE_SWARM_POLL": "2s"}), &bytes.Buffer{})
	if err != nil || !cfg.SwarmEnabled || cfg.DockerEnabled || cfg.SwarmPoll != 2*time.Second {
		t.Fatalf("swarm %v docker %v poll %v (%v)", cfg.SwarmEnabled, cfg.DockerEnabled, cfg.SwarmPoll, err)
	}
}

// A variable that does not parse gives one error, not a second one about
// the zero it left behind.
func TestServeFlagsBadEnvGivesOneError(t *testing.T) {
	_, err := parseServeFlags(nil, envOf(map[string]string{"LEVEE_DOCKER_DEBOUNCE": "soon"}), &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "must be positive") {
		t.Fatalf("error %v: want only the parse error", err)
	}
}

func TestRunUsageErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"frobnicate"}, &out, &errOut, envOf(nil)); code != 2 {
		t.Errorf("unknown command exit = %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), `unknown command "frobnicate"`) {
		t.Errorf("stderr = %q", errOut.String())
	}
	errOut.Reset()
	if code := run(context.Background(), []string{"serve", "--log-level", "loud"}, &out, &errOut, envOf(nil)); code != 2 {
		t.Errorf("bad log level exit = %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), `--log-level "loud"`) {
		t.Errorf("stderr = %q", errOut.String())
	}
}

func TestTrustedProxiesParse(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--trusted-proxies", "10.1.2.3/8, 192.0.2.7,::1"}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := cfg.trustedProxies()
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "::1/128"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("prefix %d = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &out, envOf(nil)); code != 0 || !strings.HasPrefix(out.String(), "levee ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
}

// Underscore spellings are deleted unless the operator says otherwise.
func TestUnderscoreHeadersFlag(t *testing.T) {
	for env, want := range map[string]string{"": "delete", "keep": "keep", "reject": "reject"} {
		cfg, err := parseServeFlags(nil, envOf(map[string]string{"LEVEE_UNDERSCORE_HEADERS": env}), &bytes.Buffer{})
		if err != nil || cfg.UnderscoreHeaders != want {
			t.Errorf("LEVEE_UNDERSCORE_HEADERS=%q: %q (%v), want %q", env, cfg.UnderscoreHeaders, err, want)
		}
		if _, err := proxy.ParseUnderscoreHeaders(cfg.UnderscoreHeaders); err != nil {
			t.Errorf("%q: %v", want, err)
		}
	}
}

// --tcp-splice is on by default and reaches the TCP relay's options;
// false (or LEVEE_TCP_SPLICE=false) keeps relays on the buffered copy.
func TestTCPSpliceFlag(t *testing.T) {
	a := &app{} // its router is only named (a method value), never called
	for _, c := range []struct {
		args     []string
		env      map[string]string
		noSplice bool
	}{
		{nil, nil, false},
		{[]string{"--tcp-splice=false"}, nil, true},
		{nil, map[string]string{"LEVEE_TCP_SPLICE": "false"}, true},
	} {
		cfg, err := parseServeFlags(c.args, envOf(c.env), &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%v %v: %v", c.args, c.env, err)
		}
		if got := tcpOptions(cfg, a, zerolog.Nop(), nil).NoSplice; got != c.noSplice {
			t.Errorf("%v %v: NoSplice %v, want %v", c.args, c.env, got, c.noSplice)
		}
	}
}
