package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/levee-proxy/levee/api"
	"github.com/levee-proxy/levee/breaker/fleet"
	"github.com/levee-proxy/levee/provider/constraint"
	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/router"
	"github.com/levee-proxy/levee/router/certs"
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy/compress"
	"github.com/levee-proxy/levee/router/policy/fleetsync"
	"github.com/levee-proxy/levee/router/proxy"
)

// serveConfig is everything `levee serve` is configured with. Each field is a
// flag and a LEVEE_* environment variable (flag wins over env, env over the
// default); docs/operations.md lists them.
type serveConfig struct {
	HTTPListen    string
	APIListen     string
	DockerEnabled bool
	// DockerHost is the one engine watched (DOCKER_HOST when no
	// --docker-host is given), with DockerTLSDir; DockerHosts, when set,
	// are several named hosts instead (dockerhosts.go).
	DockerHost        string
	DockerTLSDir      string
	DockerHosts       []docker.HostSpec
	DockerTLSDirs     map[string]string
	DockerHostAddrs   map[string]string
	DockerHostWeights map[string]int
	ExposedByDefault  bool
	DockerDebounce    time.Duration
	DockerResync      time.Duration
	// DockerCallTimeout, DockerPingInterval and DockerBackoffMax are the
	// docker provider's CallTimeout, PingInterval and RetryMax.
	DockerCallTimeout  time.Duration
	DockerPingInterval time.Duration
	DockerBackoffMax   time.Duration
	// SwarmEnabled runs the docker provider in Swarm mode too (service
	// labels, tasks as backends) against the same engine; SwarmPoll is
	// its re-list period while nothing happens.
	SwarmEnabled bool
	SwarmPoll    time.Duration
	LabelPrefix  string
	LogLevel     string
	LogFormat    string
	StateFile    string
	APIToken     string
	APIReadToken string
	// APIHosts are more names the API answers to (comma-separated).
	APIHosts     string
	AccessLog    bool
	RouteLatency bool
	// Log files (logfile.go), reopened on SIGUSR1; empty: stdout.
	LogFile       string
	AccessLogFile string
	// The access log's format (json, common, combined) and filters
	// (proxy.AccessLogFilter): status ranges, minimum duration, retries.
	AccessLogFormat      string
	AccessLogStatus      string
	AccessLogMinDuration time.Duration
	AccessLogRetries     bool
	// accessLogOut is where access lines go (set by runServe from
	// --access-log-file and --access-log-format); nil: the process log.
	accessLogOut    io.Writer
	ShutdownTimeout time.Duration
	DialTimeout     time.Duration
	IdleConnTimeout time.Duration
	RouteGrace      time.Duration
	TrustedProxies  string
	StrictPaths     bool
	// UnderscoreHeaders is delete, keep or reject (proxy.UnderscoreHeaders).
	UnderscoreHeaders string
	// StickySecret keys sticky cookies' backend ids; empty: a random
	// secret of the process.
	StickySecret  string
	HTTPServer    string
	BackendClient string

	// ConfigDirs and ConfigFiles are the file provider's config files
	// (provider/file); with neither it does not run.
	ConfigDirs  []string
	ConfigFiles []string

	// Kubernetes configures the Kubernetes provider (kubernetes.go).
	Kubernetes kubernetesConfig

	// DockerConstraints chooses the containers and Swarm services routed
	// (constraintflag.go); nil routes every one.
	DockerConstraints *constraint.Expr

	// Limits of the data plane (docs/operations.md, "Timeouts and limits").
	RequestBodyTimeout   time.Duration
	RequestBodyMinRate   int
	ResponseWriteTimeout time.Duration
	BackendBodyTimeout   time.Duration
	TunnelIdleTimeout    time.Duration
	// TCPSplice lets TCP routes relay with splice(2) between plain TCP
	// connections (router/proxy/tcp).
	TCPSplice        bool
	MaxClientConns   int
	UpgradeProtocols string
	// CompressMemory is the MiB that compression encoders of every route
	// may hold together (compress.Encoders); 0 compresses nothing.
	CompressMemory int
	// ErrorPagesDir is the only directory error-page files are read
	// from (router.Options.ErrorPagesDir).
	ErrorPagesDir string

	// GCHeapFloor is the heap, in MiB, below which the garbage collector
	// does not run (heapFloor); 0 leaves Go's pacing. gogc is GOGC from
	// the environment: when set, the operator's pacing wins over the floor.
	GCHeapFloor int
	// Tracing is the --tracing-* flags (tracing.go).
	Tracing tracingConfig
	// MetricsOTLP is the --metrics-otlp-* flags (metrics_otlp.go).
	MetricsOTLP metricsOTLPConfig
	gogc        string

	// The shared breaker store (docs/fleet.md); empty BreakerStore keeps
	// breakers local.
	BreakerStore              string
	BreakerStorePrefix        string
	BreakerStoreFlushInterval time.Duration
	// When a breaker stops and starts following the fleet (fleet.Options).
	BreakerStoreFallbackFlushes int
	BreakerStoreFallbackAfter   time.Duration
	BreakerStoreRejoinFlushes   int
	// How often the fleet rate limits are reconciled with the store.
	RateLimitFlushInterval time.Duration
	// Listen are the named proxy listeners (--listen, listeners.go);
	// httpListenGiven says --http-listen was set by flag or environment.
	Listen          []listenerSpec
	httpListenGiven bool
	// TLS certificates (router/certs).
	TLSCertDir     string
	TLSCerts       []certs.FilePair // --tls-cert
	TLSDefaultCert string
	TLSDefaultKey  string
	// ACME (router/certs, certmagic): on with --acme-email or --acme-ca.
	ACMEEmail  string
	ACMECA     string
	ACMECARoot string
	CertDir    string
	// ACMERenewInterval is how often certificates are checked for renewal.
	ACMERenewInterval time.Duration
	// DNS-01 (acme.go, router/certs/dnsprovider): the provider, the
	// resolvers of the propagation check and its limit (0: no check), and
	// the challenges in order (certs.ParseChallenges).
	ACMEDNSProvider           string
	ACMEDNSResolvers          string
	ACMEDNSPropagationTimeout time.Duration
	ACMEChallenges            string
	// getenv is the environment the DNS provider's credentials come from.
	getenv func(string) string
}

// envName maps a flag name to its environment variable: http-listen →
// LEVEE_HTTP_LISTEN.
func envName(flagName string) string {
	return "LEVEE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// newServeFlags defines the serve flags on a fresh FlagSet bound to cfg.
func newServeFlags(cfg *serveConfig, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("levee serve", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&cfg.HTTPListen, "http-listen", ":8080", "address of the plain proxy listener named web (used when no --listen is given, or when given explicitly too)")
	fs.Var(listenFlag{&cfg.Listen}, "listen", "a named proxy listener, name=addr[,tls[,h3[,0rtt]]|,h2c][,public-port=N][,header-timeout=D][,idle-timeout=D], or a TCP listener name=addr,tcp, or a UDP listener name=addr,udp; any but udp may add ,proxy-protocol (only --trusted-proxies may connect, each with a PROXY v1/v2 header naming the client) (h2c: cleartext HTTP/2 with prior knowledge beside HTTP/1.1, for gRPC; h3: HTTP/3 over QUIC on the UDP port of the same number too, advertised by Alt-Svc; 0rtt: accept QUIC early data, forwarded early only on routes with earlyData; public-port: the port clients reach a TLS listener on, for redirects) (repeatable; LEVEE_LISTEN separates several with ';')")
	fs.StringVar(&cfg.TLSCertDir, "tls-cert-dir", "", "directory of static certificates: name.crt (or .pem) with name.key, chosen by SNI, reloaded when the files change")
	fs.Var(tlsCertFlag{&cfg.TLSCerts}, "tls-cert", "a static certificate by its PEM files, CERT[,KEY] (KEY left out when CERT holds both), chosen by SNI beside --tls-cert-dir's, reloaded when the files change (repeatable; LEVEE_TLS_CERT separates several with ';')")
	fs.StringVar(&cfg.TLSDefaultCert, "tls-default-cert", "", "PEM certificate served for an unknown SNI (default: a self-signed one generated at start, in memory)")
	fs.StringVar(&cfg.TLSDefaultKey, "tls-default-key", "", "PEM key of --tls-default-cert")
	fs.StringVar(&cfg.ACMEEmail, "acme-email", "", "contact of the ACME account; with it (or --acme-ca) Levee obtains certificates for the hosts of tls=true routes")
	fs.StringVar(&cfg.ACMECA, "acme-ca", "", "ACME directory URL (default: Let's Encrypt; its staging CA or a private CA for tests)")
	fs.StringVar(&cfg.ACMECARoot, "acme-ca-root", "", "PEM file of the root that signs the ACME directory's HTTPS certificate (a private CA)")
	durationVar(fs, &cfg.ACMERenewInterval, "acme-renew-interval", 10*time.Minute, "how often ACME certificates are checked for renewal (a certificate is renewed once a third of its lifetime is left)")
	fs.StringVar(&cfg.ACMEDNSProvider, "acme-dns-provider", "", "DNS provider of the dns-01 challenge, which also issues wildcard hosts: cloudflare, route53 or rfc2136 (credentials from the environment, see docs/tls.md)")
	fs.StringVar(&cfg.ACMEDNSResolvers, "acme-dns-resolvers", "", "DNS servers (host[:port], comma-separated) asked for a name's zone and whether the dns-01 record is visible (default: the system's resolvers, then the zone's own servers)")
	durationVar(fs, &cfg.ACMEDNSPropagationTimeout, "acme-dns-propagation-timeout", 2*time.Minute, "how long to wait for the dns-01 record to be visible before the CA is told to look (0: do not check)")
	fs.StringVar(&cfg.ACMEChallenges, "acme-challenges", "", "ACME challenges tried, in order, comma-separated: tls-alpn-01, http-01, dns-01 (default: dns-01 with --acme-dns-provider, else http-01 and tls-alpn-01 on the listeners there are)")
	fs.StringVar(&cfg.CertDir, "cert-dir", "./levee-certs", "directory of ACME accounts, certificates and locks (share it between Levee processes: one orders, the others wait)")
	fs.StringVar(&cfg.APIListen, "api-listen", "127.0.0.1:3035", "address of the REST API, /metrics and /health")
	fs.BoolVar(&cfg.DockerEnabled, "docker", true, "watch the Docker Engine for labelled containers")
	fs.Var(dockerHostFlag{&cfg.DockerHosts}, "docker-host", "Docker Engine address, [name=]url (unix://, tcp://, https://, ssh://user@host); repeat it, each with a name, to watch several hosts, e.g. edge2=tcp://10.0.0.2:2376 (default: $DOCKER_HOST, else the local socket; LEVEE_DOCKER_HOST separates several with ',')")
	fs.Var(dockerHostAddrFlag{&cfg.DockerHostAddrs}, "docker-host-address", "where a Docker host's published ports are dialled, name=addr (default: the host of its tcp:// address); makes a host on a socket (forwarded over SSH) remote (repeatable; LEVEE_DOCKER_HOST_ADDRESS separates several with ',')")
	fs.Var(dockerHostWeightFlag{&cfg.DockerHostWeights}, "docker-host-weight", "weight of a Docker host's replicas, name=weight (1-100, default 1): multiplies each of its backends' weight, so replicas of one route on a bigger host take more of its traffic (repeatable; LEVEE_DOCKER_HOST_WEIGHT separates several with ',')")
	fs.Var(dockerTLSDirFlag{&cfg.DockerTLSDirs}, "docker-tls-dir", "TLS client certificates of a Docker host, [name=]dir holding ca.pem, cert.pem and key.pem (the Docker CLI's DOCKER_CERT_PATH layout) (repeatable; LEVEE_DOCKER_TLS_DIR separates several with ',')")
	fs.BoolVar(&cfg.ExposedByDefault, "docker-exposed-by-default", false, "route containers without <prefix>.enable=true")
	durationVar(fs, &cfg.DockerDebounce, "docker-debounce", 100*time.Millisecond, "window in which Docker changes that follow a route rebuild are collected into one rebuild (a change after a quiet period applies at once)")
	durationVar(fs, &cfg.DockerResync, "docker-resync", 5*time.Minute, "interval of the safety-net full resync with the Docker Engine")
	durationVar(fs, &cfg.DockerCallTimeout, "docker-call-timeout", docker.DefaultCallTimeout, "deadline of each Docker Engine call (ping, list, inspect, opening the event stream)")
	durationVar(fs, &cfg.DockerPingInterval, "docker-ping-interval", docker.DefaultPingInterval, "how often the Docker Engine is pinged while connected; a failed ping reconnects and resyncs")
	durationVar(fs, &cfg.DockerBackoffMax, "docker-backoff-max", docker.DefaultRetryMax, "longest wait between attempts to reconnect to the Docker Engine (the wait doubles from 250ms, with jitter)")
	fs.BoolVar(&cfg.SwarmEnabled, "swarm", false, "watch the Swarm services of the Docker Engine (a manager) for labelled services (deploy.labels); runs beside --docker")
	durationVar(fs, &cfg.SwarmPoll, "swarm-poll", docker.DefaultSwarmPoll, "how often the swarm's tasks are re-listed while nothing happens (a task stopping on another node sends no event); after an event and while a service scales, every 250ms")
	fs.Var(constraintFlag{&cfg.DockerConstraints}, "docker-constraints", dockerConstraintsUsage)
	fs.Var(pathsFlag{&cfg.ConfigDirs}, "config-dir", "directory of YAML and JSON config files (*.yaml, *.yml, *.json) of entrypoints in the API's payload shape, watched and reloaded (repeatable; LEVEE_CONFIG_DIR separates several with ';'; docs/file-provider.md)")
	fs.Var(pathsFlag{&cfg.ConfigFiles}, "config-file", "one config file of entrypoints, watched and reloaded, whatever its name (repeatable; LEVEE_CONFIG_FILE separates several with ';')")
	cfg.Kubernetes.register(fs)
	fs.StringVar(&cfg.LabelPrefix, "label-prefix", "levee", "label prefix (use \"sozune\" for compose files written for Sōzune)")
	fs.StringVar(&cfg.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&cfg.LogFormat, "log-format", "auto", "log format: json, console, or auto (console when stdout is a terminal)")
	fs.StringVar(&cfg.StateFile, "state-file", "./levee-state.json", "file holding the entrypoints created through the API")
	fs.StringVar(&cfg.APIHosts, "api-hosts", "", "comma-separated host names the API also answers to, besides its listen address and loopback names (a request with any other Host is refused, against DNS rebinding)")
	fs.StringVar(&cfg.APIToken, "api-token", "", "bearer token for the API (every method)")
	fs.StringVar(&cfg.APIReadToken, "api-read-token", "", "bearer token for the API (GET only)")
	fs.BoolVar(&cfg.AccessLog, "access-log", true, "log one line per proxied request")
	fs.StringVar(&cfg.LogFile, "log-file", "", "file the process log is appended to instead of stdout; reopened on SIGUSR1 (after logrotate renamed it)")
	fs.StringVar(&cfg.AccessLogFile, "access-log-file", "", "file the access log is appended to instead of the process log; reopened on SIGUSR1 (after logrotate renamed it)")
	fs.StringVar(&cfg.AccessLogFormat, "access-log-format", "json", "access log format: json (events with the process log's fields), common or combined (Apache's Common and Combined Log Formats)")
	fs.StringVar(&cfg.AccessLogStatus, "access-log-status", "", "log only requests answered with these statuses, comma-separated codes and ranges, e.g. 400-599,302 (with other --access-log-* filters: a request any of them keeps is logged)")
	durationVar(fs, &cfg.AccessLogMinDuration, "access-log-min-duration", 0, "log only requests that took longer than this, e.g. 200ms (0: no such filter)")
	fs.BoolVar(&cfg.AccessLogRetries, "access-log-retries", false, "with other --access-log-* filters, log also every request that was retried or whose backend failed")
	fs.BoolVar(&cfg.RouteLatency, "metrics-route-latency", false, "a latency histogram per route (17 series each) instead of one for all routes")
	durationVar(fs, &cfg.ShutdownTimeout, "shutdown-timeout", 15*time.Second, "how long SIGTERM waits for in-flight requests to finish")
	durationVar(fs, &cfg.DialTimeout, "dial-timeout", router.DefaultDialTimeout, "timeout for connecting to a backend (a connect that fails is retried on another backend)")
	durationVar(fs, &cfg.IdleConnTimeout, "idle-conn-timeout", 90*time.Second, "how long an idle keep-alive connection to a backend is kept")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", "", "comma-separated addresses or CIDRs of load balancers in front of Levee whose X-Forwarded-* headers are kept")
	fs.BoolVar(&cfg.StrictPaths, "strict-paths", false, "refuse (400 bad-path) a request path with a run of slashes or a ; parameter instead of normalising it (docs/operations.md, safety rules)")
	fs.StringVar(&cfg.UnderscoreHeaders, "underscore-headers", "delete", "request header fields whose name has an underscore or another byte than a letter, digit or dash (read as dashes by CGI, FastCGI, Rack, WSGI): delete, keep or reject (400); such spellings of the fields Levee sets or trusts are deleted whatever this says")
	fs.StringVar(&cfg.StickySecret, "sticky-secret", "", "secret that keys the sticky cookie's backend ids (HMAC-SHA256), at least 16 characters; replicas behind one load balancer give the same (default: a random one at start, so cookies do not outlive a restart)")
	fs.StringVar(&cfg.HTTPServer, "http-server", "levee", "HTTP/1.1 server of the proxy listeners, plain and TLS: levee (router/httpx/server, the fast one) or stdlib (net/http's)")
	fs.StringVar(&cfg.BackendClient, "backend-client", "levee", "HTTP/1.1 client to backends: levee (Levee's own, the fast one) or stdlib (net/http's Transport)")
	durationVar(fs, &cfg.RequestBodyTimeout, "request-body-timeout", 30*time.Second, "longest wait for the next bytes of a request body; a client that stalls longer gets 408")
	fs.IntVar(&cfg.RequestBodyMinRate, "request-body-min-rate", 512, "bytes per second a request body must average once --request-body-timeout has passed (0: no rate)")
	durationVar(fs, &cfg.ResponseWriteTimeout, "response-write-timeout", 60*time.Second, "longest wait for a client to accept the next bytes of a response; then the connection is closed")
	durationVar(fs, &cfg.BackendBodyTimeout, "backend-body-timeout", 60*time.Second, "longest wait for the next bytes of a backend's response body; then the response is cut short")
	durationVar(fs, &cfg.TunnelIdleTimeout, "tunnel-idle-timeout", 5*time.Minute, "an upgraded connection (WebSocket) with no byte in either direction for this long is closed")
	fs.BoolVar(&cfg.TCPSplice, "tcp-splice", true, "TCP routes relay with splice(2) between plain TCP connections, in the kernel (Linux); false keeps every relay on the buffered copy")
	cfg.Tracing.register(fs)
	cfg.MetricsOTLP.register(fs)
	fs.IntVar(&cfg.GCHeapFloor, "gc-heap-floor", 12, "MiB the heap may reach before the garbage collector runs; above twice its live part it is paced as Go's default, GOGC=100 (0: Go's pacing; ignored when GOGC is set)")
	fs.IntVar(&cfg.MaxClientConns, "max-client-conns", 16384, "concurrent client connections on the proxy listener; beyond it new connections are accepted and closed at once (counted)")
	fs.IntVar(&cfg.CompressMemory, "compress-memory", compress.DefaultBudget>>20, "MiB that the compression encoders of all routes may hold together (about 1 MiB a gzip stream, 2 MiB a brotli or zstd one); past it responses are sent uncompressed (0: never compress)")
	fs.StringVar(&cfg.ErrorPagesDir, "error-pages-dir", "", "the only directory whose files routes may serve as error pages (errors.file, symbolic links resolved); empty: errors.file is refused (W088)")
	fs.StringVar(&cfg.UpgradeProtocols, "upgrade-protocols", "websocket", "comma-separated protocols a client may upgrade to through the proxy (Upgrade header); h2c is never allowed")
	fs.StringVar(&cfg.BreakerStore, "breaker-store", "", "Redis URL of the breaker store shared by the replicas of a fleet (redis://[user:pass@]host:6379/0, rediss:// for TLS, ?master_name= for Sentinel, ?cluster=true for Cluster); empty keeps every breaker local (docs/fleet.md)")
	fs.StringVar(&cfg.BreakerStorePrefix, "breaker-store-prefix", fleet.DefaultPrefix, "prefix of the breaker store's keys and event channel; replicas of one fleet use the same, fleets sharing a Redis use different ones")
	durationVar(fs, &cfg.BreakerStoreFlushInterval, "breaker-store-flush-interval", fleet.DefaultFlushInterval, "how often each replica sends its breakers' outcomes to the breaker store and reads the fleet state back; also the store's answer deadline, after which a flush has failed")
	fs.IntVar(&cfg.BreakerStoreFallbackFlushes, "breaker-store-fallback-flushes", fleet.DefaultFallbackFlushes, "failed flushes in a row after which, with none good for --breaker-store-fallback-after, the breakers judge locally; until then they keep the fleet's last state")
	durationVar(fs, &cfg.BreakerStoreFallbackAfter, "breaker-store-fallback-after", fleet.DefaultFallbackAfter, "how long the breaker store must have failed every flush before the breakers judge locally (with --breaker-store-fallback-flushes)")
	durationVar(fs, &cfg.RateLimitFlushInterval, "rate-limit-flush-interval", fleetsync.DefaultFlushInterval, "how often each replica reconciles its rateLimit.scope=fleet buckets and inFlight.scope=fleet counts with the breaker store; also the store's answer deadline. A replica may admit about this long's worth of traffic beyond its share (docs/policies.md)")
	fs.IntVar(&cfg.BreakerStoreRejoinFlushes, "breaker-store-rejoin-flushes", fleet.DefaultRejoinFlushes, "good flushes in a row after which breakers that judged locally follow the fleet again")
	durationVar(fs, &cfg.RouteGrace, "route-grace", 30*time.Second, "how long a route whose containers are all gone answers 503 before it disappears, and how long its breaker state is kept")
	return fs
}

// serveUsageHead introduces serve's flags (printServeUsage).
const serveUsageHead = `Usage: levee serve [flags]

Runs the proxy. Every flag is also the environment variable shown beside it
(a flag given on the command line wins over its variable, the variable over
the default). Durations are whole seconds (5) or Go durations (250ms, 2m),
as in labels. See docs/operations.md.
`

// printServeUsage writes serve's usage: the flags by group, each with its
// LEVEE_* variable.
func printServeUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, serveUsageHead)
	printGroupedFlags(w, fs, serveFlagGroups)
}

// parseServeFlags parses args, then fills every flag not given on the
// command line from its LEVEE_* environment variable.
func parseServeFlags(args []string, getenv func(string) string, out io.Writer) (serveConfig, error) {
	var cfg serveConfig
	fs := newServeFlags(&cfg, out)
	if err := parseFlags(fs, args, out, func(w io.Writer) { printServeUsage(w, fs) }); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q (serve takes only flags)", fs.Arg(0))
	}
	if err := applyEnv(fs, getenv); err != nil {
		// A variable that failed to parse left its field at zero; checking
		// ranges now would only add a misleading second error.
		return cfg, err
	}
	if err := cfg.settleDockerHosts(getenv); err != nil {
		return cfg, err
	}
	cfg.httpListenGiven = flagGiven(fs, getenv, "http-listen")
	cfg.gogc = getenv("GOGC")
	cfg.getenv = getenv
	return cfg, cfg.check()
}

// flagGiven reports whether flag name of fs was set on the command line or
// by its LEVEE_* variable (rather than left at its default).
func flagGiven(fs *flag.FlagSet, getenv func(string) string, name string) bool {
	given := getenv(envName(name)) != ""
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// check rejects values that parse but make no sense.
func (c serveConfig) check() error {
	var errs []error
	switch c.LogFormat {
	case "auto", "json", "console":
	default:
		errs = append(errs, fmt.Errorf("--log-format %q: want json, console or auto", c.LogFormat))
	}
	if _, _, err := c.accessLogFilter(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Tracing.check(); err != nil {
		errs = append(errs, err)
	}
	if err := c.MetricsOTLP.check(); err != nil {
		errs = append(errs, err)
	}
	if c.AccessLogMinDuration < 0 {
		errs = append(errs, fmt.Errorf("--access-log-min-duration (LEVEE_ACCESS_LOG_MIN_DURATION) %s: must not be negative", c.AccessLogMinDuration))
	}
	switch c.HTTPServer {
	case "levee", "stdlib":
	default:
		errs = append(errs, fmt.Errorf("--http-server (LEVEE_HTTP_SERVER) %q: want levee or stdlib", c.HTTPServer))
	}
	switch c.UnderscoreHeaders {
	case "delete", "keep", "reject":
	default:
		errs = append(errs, fmt.Errorf("--underscore-headers (LEVEE_UNDERSCORE_HEADERS) %q: want delete, keep or reject", c.UnderscoreHeaders))
	}
	switch c.BackendClient {
	case "levee", "stdlib":
	default:
		errs = append(errs, fmt.Errorf("--backend-client (LEVEE_BACKEND_CLIENT) %q: want levee or stdlib", c.BackendClient))
	}
	if c.RequestBodyMinRate < 0 {
		errs = append(errs, fmt.Errorf("--request-body-min-rate (LEVEE_REQUEST_BODY_MIN_RATE) %d: must not be negative", c.RequestBodyMinRate))
	}
	if c.GCHeapFloor < 0 || c.GCHeapFloor > 1<<20 {
		errs = append(errs, fmt.Errorf("--gc-heap-floor (LEVEE_GC_HEAP_FLOOR) %d: want MiB from 0 (off) to %d", c.GCHeapFloor, 1<<20))
	}
	for name, n := range map[string]int{
		"--breaker-store-fallback-flushes": c.BreakerStoreFallbackFlushes, "--breaker-store-rejoin-flushes": c.BreakerStoreRejoinFlushes,
	} {
		if n <= 0 {
			errs = append(errs, fmt.Errorf("%s (%s) %d: must be at least 1", name, envName(strings.TrimPrefix(name, "--")), n))
		}
	}
	if c.ErrorPagesDir != "" {
		if st, err := os.Stat(c.ErrorPagesDir); err != nil {
			errs = append(errs, fmt.Errorf("--error-pages-dir (LEVEE_ERROR_PAGES_DIR) %q: %w", c.ErrorPagesDir, err))
		} else if !st.IsDir() || !filepath.IsAbs(c.ErrorPagesDir) {
			errs = append(errs, fmt.Errorf("--error-pages-dir (LEVEE_ERROR_PAGES_DIR) %q: want the absolute path of a directory", c.ErrorPagesDir))
		}
	}
	if c.CompressMemory < 0 || c.CompressMemory > 1<<20 {
		errs = append(errs, fmt.Errorf("--compress-memory (LEVEE_COMPRESS_MEMORY) %d: want MiB from 0 (never compress) to %d", c.CompressMemory, 1<<20))
	}
	if c.MaxClientConns <= 0 {
		errs = append(errs, fmt.Errorf("--max-client-conns (LEVEE_MAX_CLIENT_CONNS) %d: must be positive", c.MaxClientConns))
	}
	if _, err := c.upgradeProtocols(); err != nil {
		errs = append(errs, err)
	}
	if c.LabelPrefix == "" || strings.ContainsAny(c.LabelPrefix, ". =") {
		errs = append(errs, fmt.Errorf("--label-prefix %q: want a non-empty word without dots, spaces or '='", c.LabelPrefix))
	}
	for name, d := range map[string]time.Duration{
		"--docker-debounce": c.DockerDebounce, "--docker-resync": c.DockerResync,
		"--docker-call-timeout": c.DockerCallTimeout, "--docker-ping-interval": c.DockerPingInterval,
		"--shutdown-timeout": c.ShutdownTimeout, "--dial-timeout": c.DialTimeout,
		"--idle-conn-timeout": c.IdleConnTimeout, "--request-body-timeout": c.RequestBodyTimeout,
		"--response-write-timeout": c.ResponseWriteTimeout, "--backend-body-timeout": c.BackendBodyTimeout,
		"--tunnel-idle-timeout": c.TunnelIdleTimeout, "--swarm-poll": c.SwarmPoll, "--breaker-store-flush-interval": c.BreakerStoreFlushInterval, "--rate-limit-flush-interval": c.RateLimitFlushInterval,
		"--breaker-store-fallback-after": c.BreakerStoreFallbackAfter, "--acme-renew-interval": c.ACMERenewInterval,
	} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s (%s) %s: must be positive", name, envName(strings.TrimPrefix(name, "--")), d))
		}
	}
	// Below the first retry's delay the cap would be raised to it anyway.
	if c.DockerBackoffMax < docker.DefaultRetryMin {
		errs = append(errs, fmt.Errorf("--docker-backoff-max (LEVEE_DOCKER_BACKOFF_MAX) %s: must be at least %s, the first retry's delay",
			c.DockerBackoffMax, docker.DefaultRetryMin))
	}
	if c.RouteGrace < 0 {
		errs = append(errs, fmt.Errorf("--route-grace (LEVEE_ROUTE_GRACE) %s: must not be negative", c.RouteGrace))
	}
	if trusted, err := c.trustedProxies(); err != nil {
		errs = append(errs, err)
	} else if len(trusted) == 0 {
		for _, l := range c.Listen {
			if l.ProxyProtocol {
				// Only trusted peers may send a PROXY header: with none,
				// the listener would close every connection.
				errs = append(errs, fmt.Errorf("--listen %s: proxy-protocol accepts connections from --trusted-proxies only, and none is given", l.Name))
			}
		}
	}
	errs = append(errs, c.checkDNS01()...)
	if err := api.CheckHosts(c.apiHosts()); err != nil {
		errs = append(errs, fmt.Errorf("--api-hosts (LEVEE_API_HOSTS): %w", err))
	}
	if c.HTTPListen == "" {
		errs = append(errs, errors.New("--http-listen must not be empty"))
	}
	if _, err := c.listeners(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// accessLogFilter parses --access-log-format and the access log filters.
func (c serveConfig) accessLogFilter() (proxy.AccessLogFormat, proxy.AccessLogFilter, error) {
	f := proxy.AccessLogFilter{MinDuration: c.AccessLogMinDuration, Retries: c.AccessLogRetries}
	format, ferr := proxy.ParseAccessLogFormat(c.AccessLogFormat)
	if ferr != nil {
		ferr = fmt.Errorf("--access-log-format (LEVEE_ACCESS_LOG_FORMAT): %w", ferr)
	}
	var serr error
	if f.Status, serr = proxy.ParseStatusRanges(c.AccessLogStatus); serr != nil {
		serr = fmt.Errorf("--access-log-status (LEVEE_ACCESS_LOG_STATUS): %w", serr)
	}
	return format, f, errors.Join(ferr, serr)
}

// trustedProxies parses --trusted-proxies: addresses ("10.0.0.7") and
// prefixes ("10.0.0.0/8"), comma-separated.
func (c serveConfig) trustedProxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(c.TrustedProxies, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if p, err := netip.ParsePrefix(item); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(item)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxies (LEVEE_TRUSTED_PROXIES): %q is neither an IP address nor a CIDR prefix", item)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// apiHosts splits --api-hosts (checked by api.CheckHosts).
func (c serveConfig) apiHosts() []string {
	var out []string
	for _, item := range strings.Split(c.APIHosts, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// upgradeProtocols parses --upgrade-protocols: protocol names as they
// appear in an Upgrade header (RFC 9110 7.8), lower-cased. h2c is refused:
// a proxy that tunnels it lets a client speak HTTP/2 to the backend past
// every rule Levee applies per request.
func (c serveConfig) upgradeProtocols() ([]string, error) {
	var out []string
	for _, item := range strings.Split(c.UpgradeProtocols, ",") {
		item = strings.ToLower(strings.TrimSpace(item))
		switch {
		case item == "":
			continue
		case item == "h2c":
			return nil, errors.New("--upgrade-protocols (LEVEE_UPGRADE_PROTOCOLS): h2c cannot be allowed (it would bypass the proxy's per-request rules)")
		case strings.ContainsAny(item, " /;\"\t"):
			return nil, fmt.Errorf("--upgrade-protocols (LEVEE_UPGRADE_PROTOCOLS): %q is not a protocol name", item)
		}
		out = append(out, item)
	}
	return out, nil
}

// applyEnv fills every flag of fs that was not given on the command line
// from its LEVEE_* environment variable, so that flag > env > default. An
// invalid value is an error naming the variable and the value.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] {
			return
		}
		name := envName(f.Name)
		if v := getenv(name); v != "" {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s=%q: %w", name, v, valueError(f, v, err)))
			}
		}
	})
	return errors.Join(errs...)
}

// valueError explains why v is not a valid value for f: the flag package
// only says "parse error".
func valueError(f *flag.Flag, v string, err error) error {
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return err
	}
	switch getter.Get().(type) {
	case time.Duration:
		if _, perr := config.ParseDuration(v); perr != nil {
			return fmt.Errorf("invalid duration (want whole seconds, e.g. 5, or a Go duration, e.g. 250ms, 2m)")
		}
	case bool:
		return fmt.Errorf("invalid boolean (want true or false)")
	}
	return err
}

// isTerminal reports whether f is a character device (a terminal), without a
// dependency on a tty library.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
