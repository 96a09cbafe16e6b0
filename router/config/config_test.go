package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/breaker"
	"github.com/levee-proxy/levee/diagnostics"
)

// cfgDecoded is what a field case inspects, whichever way the value came in.
type cfgDecoded struct {
	ep     Entrypoint
	port   int // labels: port label; JSON: backends[0].port
	weight int // labels: weight label; JSON: backends[0].weight
}

type validCase struct {
	label string // label value
	json  string // JSON value text; "" = same as label, JSON-quoted
	want  any
}

type invalidCase struct {
	label    string
	json     string // "" = label value, JSON-quoted
	code     diagnostics.Code
	fallback string // "" = the field's Default
	value    string // expected diagnostic Value when it is one item of a list
}

type fieldCase struct {
	field   string
	get     func(d cfgDecoded) any
	valid   []validCase
	invalid []invalidCase
}

func cfgStatuses(s string) breaker.StatusSet {
	st, err := breaker.ParseStatuses(s)
	if err != nil {
		panic(err)
	}
	return st
}

func cbParams(d cfgDecoded) breaker.Params {
	if d.ep.CircuitBreaker == nil {
		return breaker.Params{}
	}
	return d.ep.CircuitBreaker.Params
}

func cfgHealth(d cfgDecoded) HealthCheck {
	if d.ep.HealthCheck == nil {
		return HealthCheck{}
	}
	return *d.ep.HealthCheck
}

var codeW024 = diagnostics.BadCircuitBreaker

var fieldCases = []fieldCase{
	{field: "host", get: func(d cfgDecoded) any { return d.ep.Hosts },
		valid: []validCase{
			{"app.example.com", `["app.example.com"]`, []string{"app.example.com"}},
			{"A.example.com, *.b.example.com,,", `["A.example.com","*.b.example.com"]`, []string{"a.example.com", "*.b.example.com"}},
			{"x.com,x.com", `"x.com, x.com"`, []string{"x.com"}},
		},
		invalid: []invalidCase{
			{label: "ok.com,https://x.com/", json: `["ok.com","https://x.com/"]`, code: diagnostics.BadHost, fallback: "-", value: "https://x.com/"},
			{label: "ok.com,x.com:80", json: `["ok.com","x.com:80"]`, code: diagnostics.BadHost, fallback: "-", value: "x.com:80"},
			{label: "ok.com,bad host", json: `["ok.com","bad host"]`, code: diagnostics.BadHost, fallback: "-", value: "bad host"},
		}},
	{field: "port", get: func(d cfgDecoded) any { return d.port },
		valid: []validCase{{"8080", "8080", 8080}, {" 1 ", `"1"`, 1}, {"65535", "", 65535}},
		invalid: []invalidCase{
			{label: "80a", code: diagnostics.BadPort},
			{label: "0", json: "0", code: diagnostics.BadPort},
			{label: "65536", json: "65536", code: diagnostics.BadPort},
			{label: "80.5", json: "80.5", code: diagnostics.BadPort},
		}},
	{field: "path", get: func(d cfgDecoded) any { return d.ep.Path },
		valid: []validCase{{"/api", "", "/api"}, {"/", "", "/"}, {"/a/b", "", "/a/b"}},
		invalid: []invalidCase{
			{label: "/api?x=1", code: diagnostics.BadPath},
			{label: "/a b", code: diagnostics.BadPath},
			{label: "/a/../b", code: diagnostics.BadPath},
			{label: "", code: diagnostics.BadPath},
			{label: "api/", code: diagnostics.PathDefaulted, fallback: "/api"},
			{label: "//api//v1/", code: diagnostics.PathDefaulted, fallback: "/api/v1"},
			{label: "/admin;x/y", code: diagnostics.PathDefaulted, fallback: "/admin/y"},
			{label: "/a/..;x/b", code: diagnostics.BadPath},
		}},
	{field: "pathRegex", get: func(d cfgDecoded) any { return d.ep.PathRegex },
		valid:   []validCase{{"^/api/v[0-9]+/", "", "^/api/v[0-9]+/"}},
		invalid: []invalidCase{{label: "^/api/(v1|v2", code: diagnostics.BadPathRegex}, {label: "(?=x)", code: diagnostics.BadPathRegex}}},
	{field: "priority", get: func(d cfgDecoded) any { return d.ep.Priority },
		valid: []validCase{{"10", "10", 10}, {"-5", "-5", -5}},
		invalid: []invalidCase{
			{label: "high", code: diagnostics.BadPriority},
			{label: "1.5", json: "1.5", code: diagnostics.BadPriority},
			{label: "99999999", json: "99999999", code: diagnostics.BadPriority},
		}},
	{field: "methods", get: func(d cfgDecoded) any { return d.ep.Methods },
		valid: []validCase{{"get, Head", `["get","Head"]`, []string{"GET", "HEAD"}}, {"POST,post", `"POST,post"`, []string{"POST"}}},
		invalid: []invalidCase{
			{label: "GET,PSOT", json: `["GET","PSOT"]`, code: diagnostics.BadMethod, fallback: "-", value: "PSOT"},
		}},
	{field: "path.caseInsensitive", get: func(d cfgDecoded) any { return d.ep.PathCaseInsensitive },
		valid:   []validCase{{"true", "true", true}, {"False", "false", false}, {"on", "", true}},
		invalid: []invalidCase{{label: "yes please", code: diagnostics.BadBool}, {label: "2", json: "2", code: diagnostics.BadBool}}},
	{field: "stripPrefix", get: func(d cfgDecoded) any { return d.ep.StripPrefix },
		valid: []validCase{{"true", "true", true}, {"YES", "", true}, {"on", "", true}, {"1", "1", true},
			{"False", "false", false}, {"no", "", false}, {"OFF", "", false}, {"0", "0", false}},
		invalid: []invalidCase{{label: "yep", code: diagnostics.BadBool}, {label: "2", json: "2", code: diagnostics.BadBool}}},
	{field: "earlyData", get: func(d cfgDecoded) any { return d.ep.EarlyData },
		valid:   []validCase{{"true", "true", true}, {"on", "", true}, {"False", "false", false}},
		invalid: []invalidCase{{label: "maybe", code: diagnostics.BadEarlyData}, {label: "2", json: "2", code: diagnostics.BadEarlyData}}},
	{field: "tls", get: func(d cfgDecoded) any { return d.ep.TLS },
		valid:   []validCase{{"true", "true", TLS{Enabled: true, Redirect: true}}, {"off", "", TLS{}}},
		invalid: []invalidCase{{label: "https", code: diagnostics.BadTLS}}},
	{field: "tls.redirect", get: func(d cfgDecoded) any { return d.ep.TLS },
		valid:   []validCase{{"false", "false", TLS{Enabled: true}}, {"yes", "", TLS{Enabled: true, Redirect: true}}},
		invalid: []invalidCase{{label: "308", json: "308", code: diagnostics.BadTLS}}},
	{field: "tls.hsts", get: func(d cfgDecoded) any { return d.ep.TLS.HSTS },
		valid: []validCase{{"31536000", "31536000", 365 * 24 * time.Hour}, {"0", "0", time.Duration(0)}, {"8760h", "", 365 * 24 * time.Hour}},
		invalid: []invalidCase{{label: "forever", code: diagnostics.BadTLS}, {label: "63072001", json: "63072001", code: diagnostics.BadTLS},
			{label: "1.5s", code: diagnostics.BadTLS}, {label: "-1", json: "-1", code: diagnostics.BadTLS}}},
	{field: "tls.hsts.includeSubDomains", get: func(d cfgDecoded) any { return d.ep.TLS.HSTSIncludeSubdomains },
		valid:   []validCase{{"true", "true", true}, {"off", "false", false}},
		invalid: []invalidCase{{label: "all", code: diagnostics.BadTLS}}},
	{field: "tls.hsts.preload", get: func(d cfgDecoded) any { return d.ep.TLS.HSTSPreload },
		valid:   []validCase{{"true", "true", true}, {"no", "", false}},
		invalid: []invalidCase{{label: "please", code: diagnostics.BadTLS}}},
	{field: "listeners", get: func(d cfgDecoded) any { return d.ep.Listeners },
		valid:   []validCase{{"websecure", `["websecure"]`, []string{"websecure"}}, {"web, web-2", "", []string{"web", "web-2"}}},
		invalid: []invalidCase{{label: "web,Web Secure", json: `["web","Web Secure"]`, code: diagnostics.BadListeners, fallback: "-", value: "Web Secure"}}},
	{field: "addPrefix", get: func(d cfgDecoded) any { return d.ep.AddPrefix },
		valid:   []validCase{{"/v1", "", "/v1"}},
		invalid: []invalidCase{{label: "v1", code: diagnostics.BadRewrite}, {label: "/v1?x", code: diagnostics.BadRewrite}}},
	{field: "loadBalancer", get: func(d cfgDecoded) any { return d.ep.LoadBalancer },
		valid: []validCase{{"round_robin", "", RoundRobin}, {"rr", "", RoundRobin}, {"RANDOM", "", Random},
			{"p2c", "", PowerOfTwo}, {"power_of_two", "", PowerOfTwo}, {"leastconn", "", LeastConnections}, {"least_connections", "", LeastConnections}},
		invalid: []invalidCase{{label: "fastest", code: diagnostics.BadLoadBalancer}, {label: "1", json: "1", code: diagnostics.BadLoadBalancer}}},
	{field: "weight", get: func(d cfgDecoded) any { return d.weight },
		valid: []validCase{{"50", "50", 50}, {"0", "0", 0}},
		invalid: []invalidCase{
			{label: "-3", json: "-3", code: diagnostics.BadWeight},
			{label: "heavy", code: diagnostics.BadWeight},
			{label: "2.5", json: "2.5", code: diagnostics.BadWeight},
		}},
	{field: "backendTimeout", get: func(d cfgDecoded) any { return d.ep.BackendTimeout },
		valid: []validCase{{"10", "10", 10 * time.Second}, {"1500ms", "", 1500 * time.Millisecond}, {"2m", "", 2 * time.Minute}, {"15", `"15"`, 15 * time.Second}},
		invalid: []invalidCase{
			{label: "ten", code: diagnostics.BadTimeout},
			{label: "0", json: "0", code: diagnostics.BadTimeout},
			{label: "-1s", code: diagnostics.BadTimeout},
			{label: "1.5", json: "1.5", code: diagnostics.BadTimeout},
		}},
	{field: "retry.attempts", get: func(d cfgDecoded) any { return d.ep.Retry.Attempts },
		valid: []validCase{{"3", "3", 3}, {"1", "1", 1}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadRetry}, {label: "11", json: "11", code: diagnostics.BadRetry},
			{label: "many", code: diagnostics.BadRetry}}},
	{field: "retry.bodyBuffer", get: func(d cfgDecoded) any { return d.ep.Retry.BodyBuffer },
		valid: []validCase{{"1MiB", "", int64(1 << 20)}, {"512kib", "", int64(512 << 10)}, {"100000", "100000", int64(100000)},
			{"2 MB", "", int64(2_000_000)}, {"16MiB", "", int64(16 << 20)}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadBodyBuffer}, {label: "17MiB", code: diagnostics.BadBodyBuffer},
			{label: "lots", code: diagnostics.BadBodyBuffer}, {label: "1.5MiB", code: diagnostics.BadBodyBuffer},
			{label: "-1", json: "-1", code: diagnostics.BadBodyBuffer}, {label: "true", json: "true", code: diagnostics.BadBodyBuffer}}},
	{field: "maxRequestBodyBytes", get: func(d cfgDecoded) any { return d.ep.MaxRequestBodyBytes },
		valid: []validCase{{"10MiB", "", int64(10 << 20)}, {"1", "1", int64(1)}, {"10485760", "10485760", int64(10 << 20)},
			{"1GiB", "", int64(1 << 30)}, {"5kb", "", int64(5000)}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadBodyLimit}, {label: "ten megs", code: diagnostics.BadBodyLimit},
			{label: "-5", json: "-5", code: diagnostics.BadBodyLimit}, {label: "99999999999GiB", code: diagnostics.BadBodyLimit},
			{label: "MiB", code: diagnostics.BadBodyLimit}}},
	{field: "healthCheck.path", get: func(d cfgDecoded) any { return cfgHealth(d).Path },
		valid:   []validCase{{"/healthz", "", "/healthz"}},
		invalid: []invalidCase{{label: "healthz", code: diagnostics.BadHealthCheck}}},
	{field: "healthCheck.status", get: func(d cfgDecoded) any { return cfgHealth(d).Status },
		valid:   []validCase{{"200-299", "", cfgStatuses("200-299")}, {"2xx,304", `[200, "201-299", 304]`, cfgStatuses("200-299,304")}, {"204", "204", cfgStatuses("204")}},
		invalid: []invalidCase{{label: "ok", code: diagnostics.BadHealthCheck}, {label: "700", json: "700", code: diagnostics.BadHealthCheck}}},
	{field: "healthCheck.timeout", get: func(d cfgDecoded) any { return cfgHealth(d).Timeout },
		valid:   []validCase{{"2", "2", 2 * time.Second}, {"250ms", "", 250 * time.Millisecond}},
		invalid: []invalidCase{{label: "soon", code: diagnostics.BadHealthCheck}, {label: "0", json: "0", code: diagnostics.BadHealthCheck}}},
	{field: "healthCheck.interval", get: func(d cfgDecoded) any { return cfgHealth(d).Interval },
		valid:   []validCase{{"5s", "", 5 * time.Second}},
		invalid: []invalidCase{{label: "often", code: diagnostics.BadHealthCheck}}},
	{field: "healthCheck.rise", get: func(d cfgDecoded) any { return cfgHealth(d).Rise },
		valid:   []validCase{{"4", "4", 4}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadHealthCheck}}},
	{field: "healthCheck.fall", get: func(d cfgDecoded) any { return cfgHealth(d).Fall },
		valid:   []validCase{{"5", "5", 5}},
		invalid: []invalidCase{{label: "x", code: diagnostics.BadHealthCheck}}},
	{field: "passiveHealth.consecutiveFailures", get: func(d cfgDecoded) any { return d.ep.PassiveHealth.ConsecutiveFailures },
		valid: []validCase{{"2", "2", 2}, {"1000", `"1000"`, 1000}},
		invalid: []invalidCase{
			{label: "0", json: "0", code: diagnostics.BadPassiveHealth}, {label: "1001", json: "1001", code: diagnostics.BadPassiveHealth},
			{label: "-1", json: "-1", code: diagnostics.BadPassiveHealth}, {label: "many", code: diagnostics.BadPassiveHealth},
			{label: "2.5", json: "2.5", code: diagnostics.BadPassiveHealth}, {label: "true", json: "true", code: diagnostics.BadPassiveHealth},
		}},
	{field: "passiveHealth.ejectTime", get: func(d cfgDecoded) any { return d.ep.PassiveHealth.EjectTime },
		valid: []validCase{{"30s", "", 30 * time.Second}, {"20", "20", 20 * time.Second}},
		invalid: []invalidCase{
			{label: "0", json: "0", code: diagnostics.BadPassiveHealth}, {label: "-5s", code: diagnostics.BadPassiveHealth},
			{label: "soon", code: diagnostics.BadPassiveHealth},
		}},
	{field: "passiveHealth.maxEjectTime", get: func(d cfgDecoded) any { return d.ep.PassiveHealth.MaxEjectTime },
		valid: []validCase{{"10m", "", 10 * time.Minute}, {"10s", "", 10 * time.Second}},
		invalid: []invalidCase{
			{label: "0", json: "0", code: diagnostics.BadPassiveHealth}, {label: "later", code: diagnostics.BadPassiveHealth},
			// Below the default ejectTime (10s): the cross-field rule.
			{label: "5s", code: diagnostics.BadPassiveHealth},
		}},
	{field: "passiveHealth.maxEjectedShare", get: func(d cfgDecoded) any { return d.ep.PassiveHealth.MaxEjectedShare },
		valid: []validCase{{"0.3", "0.3", 0.3}, {"1", "1", 1.0}},
		invalid: []invalidCase{
			{label: "0", json: "0", code: diagnostics.BadPassiveHealth}, {label: "1.5", json: "1.5", code: diagnostics.BadPassiveHealth},
			{label: "-0.2", json: "-0.2", code: diagnostics.BadPassiveHealth}, {label: "half", code: diagnostics.BadPassiveHealth},
			{label: "NaN", code: diagnostics.BadPassiveHealth},
		}},
	{field: "circuitBreaker.enabled", get: func(d cfgDecoded) any { return d.ep.CircuitBreaker != nil },
		valid:   []validCase{{"true", "true", true}, {"off", "", false}},
		invalid: []invalidCase{{label: "maybe", code: diagnostics.BadBool}}},
	{field: "circuitBreaker.threshold", get: func(d cfgDecoded) any { return cbParams(d).Threshold },
		valid: []validCase{{"0.5", "0.5", 0.5}, {"1", "1", 1.0}, {"0.25", `"0.25"`, 0.25}},
		invalid: []invalidCase{
			{label: "abc", code: codeW024}, {label: "1.5", json: "1.5", code: codeW024}, {label: "0", json: "0", code: codeW024},
			{label: "-0.1", json: "-0.1", code: codeW024}, {label: "NaN", code: codeW024}, {label: "true", json: "true", code: codeW024},
		}},
	{field: "circuitBreaker.minRequests", get: func(d cfgDecoded) any { return cbParams(d).MinRequests },
		valid: []validCase{{"20", "20", 20}, {"1", "1", 1}},
		invalid: []invalidCase{{label: "1.5", json: "1.5", code: codeW024}, {label: "abc", code: codeW024}, {label: "0", json: "0", code: codeW024},
			{label: "-1", json: "-1", code: codeW024}, {label: "100001", json: "100001", code: codeW024}}},
	{field: "circuitBreaker.window", get: func(d cfgDecoded) any { return cbParams(d).Window },
		valid:   []validCase{{"60", "60", time.Minute}, {"30s", "", 30 * time.Second}, {"0", "0", time.Duration(0)}},
		invalid: []invalidCase{{label: "500ms", code: codeW024, fallback: "0s"}, {label: "long", code: codeW024}}},
	{field: "circuitBreaker.consecutiveFailures", get: func(d cfgDecoded) any { return cbParams(d).ConsecutiveFailures },
		valid:   []validCase{{"5", "5", 5}, {"0", "0", 0}},
		invalid: []invalidCase{{label: "-1", json: "-1", code: codeW024, fallback: "0"}, {label: "five", code: codeW024}}},
	{field: "circuitBreaker.slowCallDuration", get: func(d cfgDecoded) any { return cbParams(d).SlowCallDuration },
		valid:   []validCase{{"2s", "", 2 * time.Second}, {"3", "3", 3 * time.Second}},
		invalid: []invalidCase{{label: "-2s", code: codeW024, fallback: "0s"}, {label: "slow", code: codeW024}}},
	{field: "circuitBreaker.slowCallThreshold", get: func(d cfgDecoded) any { return cbParams(d).SlowCallThreshold },
		valid:   []validCase{{"0.8", "0.8", 0.8}},
		invalid: []invalidCase{{label: "2", json: "2", code: codeW024, fallback: "0"}, {label: "x", code: codeW024}}},
	{field: "circuitBreaker.cooldown", get: func(d cfgDecoded) any { return cbParams(d).Cooldown },
		valid:   []validCase{{"10", "10", 10 * time.Second}, {"1m", "", time.Minute}},
		invalid: []invalidCase{{label: "0", json: "0", code: codeW024}, {label: "-5s", code: codeW024}, {label: "later", code: codeW024}, {label: "1.5", json: "1.5", code: codeW024}}},
	{field: "circuitBreaker.maxCooldown", get: func(d cfgDecoded) any { return cbParams(d).MaxCooldown },
		valid:   []validCase{{"5m", "", 5 * time.Minute}},
		invalid: []invalidCase{{label: "1s", code: codeW024, fallback: "10s"}, {label: "x", code: codeW024}}},
	{field: "circuitBreaker.halfOpenProbes", get: func(d cfgDecoded) any { return cbParams(d).HalfOpenProbes },
		valid:   []validCase{{"3", "3", 3}},
		invalid: []invalidCase{{label: "0", json: "0", code: codeW024}, {label: "20000", json: "20000", code: codeW024}}},
	{field: "circuitBreaker.successesToClose", get: func(d cfgDecoded) any { return cbParams(d).SuccessesToClose },
		valid:   []validCase{{"2", "2", 2}},
		invalid: []invalidCase{{label: "0", json: "0", code: codeW024}, {label: "-2", json: "-2", code: codeW024}}},
	{field: "circuitBreaker.probeTimeout", get: func(d cfgDecoded) any { return cbParams(d).ProbeTimeout },
		valid:   []validCase{{"30s", "", 30 * time.Second}},
		invalid: []invalidCase{{label: "-1s", code: codeW024, fallback: "10s"}}},
	{field: "circuitBreaker.failureStatuses", get: func(d cfgDecoded) any { return cbParams(d).FailureStatuses },
		valid:   []validCase{{"500,502-504", "", cfgStatuses("500,502-504")}, {"5xx", `["5xx"]`, cfgStatuses("500-599")}, {"503", "503", cfgStatuses("503")}},
		invalid: []invalidCase{{label: "50x", code: codeW024}, {label: "600", json: "600", code: codeW024}, {label: "504-502", code: codeW024}}},
	{field: "circuitBreaker.successStatuses", get: func(d cfgDecoded) any { return cbParams(d).SuccessStatuses },
		valid:   []validCase{{"2xx,3xx", "", cfgStatuses("200-399")}},
		invalid: []invalidCase{{label: "good", code: codeW024}}},
	{field: "circuitBreaker.cooldownJitter", get: func(d cfgDecoded) any { return cbParams(d).CooldownJitter },
		valid:   []validCase{{"0.1", "0.1", 0.1}},
		invalid: []invalidCase{{label: "1.5", json: "1.5", code: codeW024, fallback: "0"}}},
	{field: "circuitBreaker.recoveryDuration", get: func(d cfgDecoded) any { return cbParams(d).RecoveryDuration },
		valid:   []validCase{{"30s", "", 30 * time.Second}},
		invalid: []invalidCase{{label: "-1s", code: codeW024, fallback: "0s"}}},
	{field: "circuitBreaker.mode", get: func(d cfgDecoded) any { return cbParams(d).Mode },
		valid:   []validCase{{"shadow", "", breaker.Shadow}, {"Enforce", "", breaker.Enforce}},
		invalid: []invalidCase{{label: "dry-run", code: codeW024}}},
	{field: "circuitBreaker.responseCode", get: func(d cfgDecoded) any { return d.ep.CircuitBreaker.ResponseCode },
		valid:   []validCase{{"429", "429", 429}},
		invalid: []invalidCase{{label: "99", json: "99", code: codeW024}, {label: "teapot", code: codeW024}}},
	{field: "circuitBreaker.responseBody", get: func(d cfgDecoded) any { return d.ep.CircuitBreaker.ResponseBody },
		valid:   []validCase{{"try later", "", "try later"}},
		invalid: []invalidCase{{label: strings.Repeat("x", 5000), code: codeW024}}},
	{field: "circuitBreaker.scope", get: func(d cfgDecoded) any { return d.ep.CircuitBreaker.Scope },
		valid:   []validCase{{"backend", "", ScopeBackend}, {"ROUTE", "", ScopeRoute}},
		invalid: []invalidCase{{label: "global", code: codeW024}}},
}

const cfgLabelPrefix = "levee.http.app."

func cfgLabelKey(field string) string { return cfgLabelPrefix + field }

var cfgSrc = diagnostics.Source{Provider: "docker", ObjectID: "c1", ObjectName: "web-1", Service: "app"}

func decodeLabel(t *testing.T, field, value string) (cfgDecoded, []diagnostics.Diagnostic) {
	t.Helper()
	fields := map[string]string{field: value}
	for k, v := range fieldCompanions[field] {
		fields[k] = v
	}
	if strings.HasPrefix(field, "tcp.") {
		// The tcp.* fields apply to TCP routes only, which need a listener.
		if field != "tcp.listener" {
			fields["tcp.listener"] = "postgres"
		}
		cfg, ds := DecodeTCPLabels(fields, cfgSrc, cfgLabelKey)
		return cfgDecoded{ep: cfg.Entrypoint, port: cfg.Port, weight: cfg.Weight}, ds
	}
	if strings.HasPrefix(field, "udp.") {
		// The udp.* fields apply to UDP routes only, which need a listener.
		if field != "udp.listener" {
			fields["udp.listener"] = "dns"
		}
		cfg, ds := DecodeUDPLabels(fields, cfgSrc, cfgLabelKey)
		return cfgDecoded{ep: cfg.Entrypoint, port: cfg.Port, weight: cfg.Weight}, ds
	}
	if field != "host" {
		fields["host"] = "app.example.com"
	}
	if strings.HasPrefix(field, "tls.") {
		fields["tls"] = "true" // the tls.* fields apply to TLS routes only
	}
	cfg, ds := DecodeLabels(fields, cfgSrc, cfgLabelKey)
	return cfgDecoded{ep: cfg.Entrypoint, port: cfg.Port, weight: cfg.Weight}, ds
}

// payloadWith builds a valid payload with the field at jsonPath set to the
// raw JSON value.
func payloadWith(t *testing.T, jsonPath, raw string) []byte {
	t.Helper()
	backend := map[string]any{"address": "10.0.0.5", "port": 8080}
	cfg := map[string]any{"hostnames": []string{"app.example.com"}}
	switch {
	case strings.HasPrefix(jsonPath, "backends[]."):
		backend[strings.TrimPrefix(jsonPath, "backends[].")] = json.RawMessage(raw)
	case strings.HasPrefix(jsonPath, "config."):
		setConfigPath(cfg, jsonPath, json.RawMessage(raw))
		for path, v := range jsonCompanions(jsonPath) {
			setConfigPath(cfg, path, v)
		}
		if p := strings.Split(jsonPath, "."); len(p) == 3 && p[1] == "tls" && p[2] != "enabled" {
			setConfigPath(cfg, "config.tls.enabled", true) // the tls.* fields apply to TLS routes only
		}
	default:
		t.Fatalf("unexpected JSON path %q", jsonPath)
	}
	payload := map[string]any{"name": "app", "backends": []any{backend}, "config": cfg}
	if strings.HasPrefix(jsonPath, "config.tcp.") {
		// The tcp.* fields apply to TCP routes only, which need a listener.
		payload["protocol"] = "Tcp"
		delete(cfg, "hostnames")
		if jsonPath != "config.tcp.listener" {
			setConfigPath(cfg, "config.tcp.listener", "postgres")
		}
	}
	if strings.HasPrefix(jsonPath, "config.udp.") {
		// The udp.* fields apply to UDP routes only, which need a listener.
		payload["protocol"] = "Udp"
		delete(cfg, "hostnames")
		if jsonPath != "config.udp.listener" {
			setConfigPath(cfg, "config.udp.listener", "dns")
		}
	}
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatalf("build payload for %s=%s: %v", jsonPath, raw, err)
	}
	return b
}

// setConfigPath sets a config.* path in cfg, making the groups on the way.
func setConfigPath(cfg map[string]any, jsonPath string, v any) {
	parts := strings.Split(strings.TrimPrefix(jsonPath, "config."), ".")
	m := cfg
	for _, p := range parts[:len(parts)-1] {
		sub, ok := m[p].(map[string]any)
		if !ok {
			sub = map[string]any{}
			m[p] = sub
		}
		m = sub
	}
	m[parts[len(parts)-1]] = v
}

func decodeJSON(t *testing.T, f Field, raw string) (cfgDecoded, []diagnostics.Diagnostic) {
	t.Helper()
	ep, ds, err := DecodeEntrypoint(FormatJSON, payloadWith(t, f.JSON, raw), diagnostics.Source{})
	if err != nil {
		t.Fatalf("%s=%s: unexpected error %v", f.JSON, raw, err)
	}
	d := cfgDecoded{ep: ep}
	if len(ep.Backends) > 0 {
		d.port, d.weight = ep.Backends[0].Port, ep.Backends[0].Weight
	}
	return d, ds
}

func jsonKey(f Field) string {
	if strings.HasPrefix(f.JSON, "backends[].") {
		return "backends[0]." + strings.TrimPrefix(f.JSON, "backends[].")
	}
	return f.JSON
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonDisplay is the Value a JSON value is reported with: strings without
// quotes, numbers and booleans as written.
func jsonDisplay(raw string) string {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return raw
	}
	return displayValue(v)
}

func cfgField(t *testing.T, label string) Field {
	t.Helper()
	for _, f := range Fields() {
		if f.Label == label {
			return f
		}
	}
	t.Fatalf("no field %q in the table", label)
	return Field{}
}

// onlyCode returns the diagnostics with code.
func cfgWithCode(ds []diagnostics.Diagnostic, code diagnostics.Code) []diagnostics.Diagnostic {
	var out []diagnostics.Diagnostic
	for _, d := range ds {
		if d.Code == code {
			out = append(out, d)
		}
	}
	return out
}

// portInfo filters the I002 a JSON backend without port would give (never
// here: payloadWith always sets one) so tests see field diagnostics only.
func TestFieldTable(t *testing.T) {
	covered := map[string]bool{}
	for _, fc := range fieldCases {
		fc := fc
		covered[fc.field] = true
		f := cfgField(t, fc.field)
		t.Run(fc.field, func(t *testing.T) {
			for _, vc := range fc.valid {
				d, ds := decodeLabel(t, fc.field, vc.label)
				if len(ds) != 0 {
					t.Errorf("label %s=%q: unexpected diagnostics %v", fc.field, vc.label, ds)
				}
				if got := fc.get(d); !reflect.DeepEqual(got, vc.want) {
					t.Errorf("label %s=%q: got %#v, want %#v", fc.field, vc.label, got, vc.want)
				}
				raw := vc.json
				if raw == "" {
					raw = quoteJSON(vc.label)
				}
				d, ds = decodeJSON(t, f, raw)
				if len(ds) != 0 {
					t.Errorf("JSON %s=%s: unexpected diagnostics %v", f.JSON, raw, ds)
				}
				if got := fc.get(d); !reflect.DeepEqual(got, vc.want) {
					t.Errorf("JSON %s=%s: got %#v, want %#v", f.JSON, raw, got, vc.want)
				}
			}
			for _, ic := range fc.invalid {
				wantFallback := ic.fallback
				switch wantFallback {
				case "":
					wantFallback = fallbackText(f.Default)
				case "-":
					wantFallback = ""
				}
				check := func(how, key, value string, ds []diagnostics.Diagnostic) {
					t.Helper()
					got := cfgWithCode(ds, ic.code)
					if len(got) != 1 {
						t.Errorf("%s %s=%q: want one %s, got %v", how, key, value, ic.code, ds)
						return
					}
					g := got[0]
					if g.Key != key || g.Value != value || g.Fallback != wantFallback {
						t.Errorf("%s: got key %q value %q fallback %q, want %q %q %q (%v)", how, g.Key, g.Value, g.Fallback, key, value, wantFallback, g)
					}
					if e, _ := diagnostics.Lookup(ic.code); g.Severity != e.Severity {
						t.Errorf("%s: severity %v, want the catalogue's %v", how, g.Severity, e.Severity)
					}
					if len(ds) != 1 && ic.code != diagnostics.BadHost {
						t.Errorf("%s %s=%q: extra diagnostics %v", how, key, value, ds)
					}
				}
				_, ds := decodeLabel(t, fc.field, ic.label)
				wantValue := ic.label
				if ic.value != "" {
					wantValue = ic.value
				}
				check("label", cfgLabelKey(fc.field), wantValue, ds)

				raw := ic.json
				if raw == "" {
					raw = quoteJSON(ic.label)
				}
				_, ds = decodeJSON(t, f, raw)
				wantValue = jsonDisplay(raw)
				if ic.value != "" {
					wantValue = ic.value
				}
				if f.Label == "port" && ic.fallback == "" {
					// An API backend has no exposed ports to choose from.
					wantFallback = "80"
				}
				check("JSON", jsonKey(f), wantValue, ds)
			}
		})
	}
	for _, f := range Fields() {
		if !covered[f.Label] {
			t.Errorf("field %s has no table test case", f.Label)
		}
		if f.Doc == "" || f.Example == "" || f.Default == "" || f.Kind == "" {
			t.Errorf("field %s: incomplete documentation %+v", f.Label, f)
		}
		if _, ok := diagnostics.Lookup(f.Code); !ok {
			t.Errorf("field %s: code %s not in the catalogue", f.Label, f.Code)
		}
	}
}

// Every field's example must be valid: the docs show it.
func TestFieldExamplesAreValid(t *testing.T) {
	for _, f := range Fields() {
		_, ds := decodeLabel(t, f.Label, f.Example)
		if f.Label == "tls.insecureSkipVerify" {
			ds = slices.DeleteFunc(ds, func(d diagnostics.Diagnostic) bool { return d.Code == diagnostics.InsecureBackendTLS }) // always reported
		}
		if len(ds) != 0 {
			t.Errorf("example %s=%s: %v", f.Label, f.Example, ds)
		}
	}
}

const seedPayload = `{"name":"app","protocol":"Http","backends":[{"address":"10.0.0.5","port":8080,"weight":100}],"config":{"hostnames":["app.example.com"],"circuit_breaker":{"threshold":0.5,"min_requests":20,"cooldown_secs":10}}}`

func TestDecodeSeedPayload(t *testing.T) {
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(seedPayload), diagnostics.Source{})
	if err != nil || len(ds) != 0 {
		t.Fatalf("seed payload: err %v, diagnostics %v", err, ds)
	}
	if ep.ID != "app" || ep.Name != "app" || ep.Source != SourceAPI || ep.Protocol != ProtocolHTTP {
		t.Errorf("identity: %+v", ep)
	}
	if want := []Backend{{Address: "10.0.0.5", Port: 8080, Weight: 100}}; !reflect.DeepEqual(ep.Backends, want) {
		t.Errorf("backends %+v, want %+v", ep.Backends, want)
	}
	cb := ep.CircuitBreaker
	if cb == nil {
		t.Fatal("circuit breaker not enabled")
	}
	if cb.Params.Threshold != 0.5 || cb.Params.MinRequests != 20 || cb.Params.Cooldown != 10*time.Second {
		t.Errorf("breaker params %+v", cb.Params)
	}
	if cb.ResponseCode != 503 || cb.Scope != ScopeRoute || cb.ResponseBody != DefaultResponseBody {
		t.Errorf("breaker response %+v", cb)
	}
	if !cb.Params.FailureStatuses.Has(500) || !cb.Params.FailureStatuses.Has(599) || cb.Params.FailureStatuses.Has(404) {
		t.Errorf("failure statuses %s, want 500-599", cb.Params.FailureStatuses)
	}
}

func TestDecodeYAMLSameAsJSON(t *testing.T) {
	yml := `
name: app
protocol: http
backends:
  - address: 10.0.0.5
    port: 8080
    weight: 100
config:
  hostnames: [app.example.com]
  circuit_breaker:
    threshold: 0.5
    min_requests: 20
    cooldown_secs: 10
`
	fromJSON, _, err := DecodeEntrypoint(FormatJSON, []byte(seedPayload), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, ds, err := DecodeEntrypoint(FormatYAML, []byte(yml), diagnostics.Source{})
	if err != nil || len(ds) != 0 {
		t.Fatalf("YAML: err %v, diagnostics %v", err, ds)
	}
	if !reflect.DeepEqual(fromJSON, fromYAML) {
		t.Errorf("YAML decodes differently:\n%+v\n%+v", fromYAML, fromJSON)
	}
	// The same mistake gives the same diagnostic in YAML.
	_, ds, err = DecodeEntrypoint(FormatYAML, []byte("name: app\nbackends: []\nconfig:\n  hostnames: [a.com]\n  circuit_breaker:\n    threshold: 1.5\n"), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	got := cfgWithCode(ds, codeW024)
	if len(got) != 1 || got[0].Key != "config.circuit_breaker.threshold" || got[0].Value != "1.5" || got[0].Fallback != "0.5" {
		t.Errorf("YAML threshold 1.5: %v", ds)
	}
}

func TestDecodeEntrypointStructuralErrors(t *testing.T) {
	cases := []struct {
		name   string
		format Format
		body   string
		status int
		code   diagnostics.Code // a diagnostic the error must carry, if any
	}{
		{"malformed JSON", FormatJSON, `{"name":`, 400, ""},
		{"trailing data", FormatJSON, `{"name":"a","config":{"hostnames":["a.com"]}} {}`, 400, ""},
		{"empty", FormatJSON, ``, 400, ""},
		{"not an object", FormatJSON, `[1,2]`, 400, ""},
		{"malformed YAML", FormatYAML, "name: [a\n", 400, ""},
		{"no name", FormatJSON, `{"config":{"hostnames":["a.com"]}}`, 422, ""},
		{"bad name", FormatJSON, `{"name":"App","config":{"hostnames":["a.com"]}}`, 422, ""},
		{"name with dot", FormatJSON, `{"name":"a.b","config":{"hostnames":["a.com"]}}`, 422, ""},
		{"name not a string", FormatJSON, `{"name":5,"config":{"hostnames":["a.com"]}}`, 422, ""},
		{"no hostnames", FormatJSON, `{"name":"app","config":{}}`, 422, diagnostics.MissingHost},
		{"no config", FormatJSON, `{"name":"app"}`, 422, diagnostics.MissingHost},
		{"only bad hostnames", FormatJSON, `{"name":"app","config":{"hostnames":["http://x/"]}}`, 422, diagnostics.MissingHost},
		{"protocol quic", FormatJSON, `{"name":"app","protocol":"Quic","config":{"hostnames":["a.com"]}}`, 422, diagnostics.UnknownProtocol},
		{"udp without listener", FormatJSON, `{"name":"app","protocol":"Udp","config":{}}`, 422, diagnostics.UDPNoListener},
		{"tcp without listener", FormatJSON, `{"name":"app","protocol":"Tcp","config":{"tcp":{"sni":["a.com"]}}}`, 422, diagnostics.TCPNoListener},
		{"config not an object", FormatJSON, `{"name":"app","config":[]}`, 422, ""},
		{"backends not a list", FormatJSON, `{"name":"app","backends":{},"config":{"hostnames":["a.com"]}}`, 422, ""},
	}
	for _, c := range cases {
		_, _, err := DecodeEntrypoint(c.format, []byte(c.body), diagnostics.Source{})
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: want *InputError, got %v", c.name, err)
			continue
		}
		if ie.Status != c.status || ie.Message == "" {
			t.Errorf("%s: status %d message %q, want %d", c.name, ie.Status, ie.Message, c.status)
		}
		if c.code != "" && len(cfgWithCode(ie.Diagnostics, c.code)) != 1 {
			t.Errorf("%s: want %s in %v", c.name, c.code, ie.Diagnostics)
		}
	}
}

func TestDecodeEntrypointLenientForms(t *testing.T) {
	for _, body := range []string{
		`{"name":"app","protocol":"HTTP","config":{"hostnames":["a.com"]}}`,
		`{"name":"app","protocol":"http","config":{"hostnames":"a.com"}}`,
		`{"name":"app_1-x","config":{"hostnames":["a.com"]}}`,
	} {
		ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if ep.Protocol != ProtocolHTTP || len(ep.Hosts) != 1 {
			t.Errorf("%s: %+v", body, ep)
		}
		// No backends: accepted, answers 503, says so.
		if got := cfgWithCode(ds, diagnostics.NoBackends); len(got) != 1 || len(ds) != 1 {
			t.Errorf("%s: want exactly W034, got %v", body, ds)
		}
	}
}

func TestDecodeEntrypointUnknownKeys(t *testing.T) {
	body := `{"name":"app","protocl":"Http","backends":[{"address":"a","prot":1}],
	  "config":{"hostnames":["a.com"],"circuitbreaker":{"threshold":0.5},
	  "circuit_breaker":{"treshold":0.5},"load_balancr":"rr"}}`
	_, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"protocl":                         "did you mean protocol?",
		"backends[0].prot":                "did you mean port?",
		"config.circuitbreaker":           "did you mean config.circuit_breaker?",
		"config.circuit_breaker.treshold": "did you mean config.circuit_breaker.threshold?",
		"config.load_balancr":             "did you mean config.load_balancer?",
	}
	got := map[string]string{}
	for _, d := range cfgWithCode(ds, diagnostics.UnknownKey) {
		got[d.Key] = d.Hint
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("W013 hints:\n got %v\nwant %v", got, want)
	}
}

func TestDecodeLabelsUnknownKeys(t *testing.T) {
	_, ds := DecodeLabels(map[string]string{
		"host":                    "a.com",
		"circuitbreaker.treshold": "0.5",
		"loadbalancr":             "rr",
		"totallyUnrelated":        "x",
	}, cfgSrc, cfgLabelKey)
	want := map[string]string{
		cfgLabelKey("circuitbreaker.treshold"): "did you mean " + cfgLabelKey("circuitBreaker.threshold") + "?",
		cfgLabelKey("loadbalancr"):             "did you mean " + cfgLabelKey("loadBalancer") + "?",
		cfgLabelKey("totallyUnrelated"):        "",
	}
	got := map[string]string{}
	for _, d := range ds {
		if d.Code != diagnostics.UnknownKey || d.Source != cfgSrc {
			t.Errorf("unexpected %v", d)
		}
		got[d.Key] = d.Hint
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("W013 hints:\n got %v\nwant %v", got, want)
	}
}

func TestAliasesAndDuplicates(t *testing.T) {
	cfg, ds := DecodeLabels(map[string]string{"host": "a.com", "prefix": "/api"}, cfgSrc, cfgLabelKey)
	if cfg.Entrypoint.Path != "/api" || len(ds) != 0 {
		t.Errorf("prefix alias: %q %v", cfg.Entrypoint.Path, ds)
	}
	cfg, ds = DecodeLabels(map[string]string{"host": "a.com", "prefix": "/v1", "path": "/api"}, cfgSrc, cfgLabelKey)
	if cfg.Entrypoint.Path != "/api" || len(ds) != 1 || ds[0].Code != diagnostics.DuplicateKey || ds[0].Key != cfgLabelKey("prefix") {
		t.Errorf("path+prefix: %q %v", cfg.Entrypoint.Path, ds)
	}
	body := `{"name":"a","backends":[],"config":{"hostnames":["a.com"],"circuit_breaker":{"cooldown":"20s","cooldown_secs":5}}}`
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	dup := cfgWithCode(ds, diagnostics.DuplicateKey)
	if ep.CircuitBreaker.Params.Cooldown != 20*time.Second || len(dup) != 1 || dup[0].Key != "config.circuit_breaker.cooldown_secs" {
		t.Errorf("cooldown+cooldown_secs: %v %v", ep.CircuitBreaker.Params.Cooldown, ds)
	}
}

func TestBreakerCrossFieldAndDefaults(t *testing.T) {
	// One bad field falls back; the others stay as given and the breaker
	// stays on.
	cfg, ds := DecodeLabels(map[string]string{
		"host":                       "a.com",
		"circuitBreaker.threshold":   "abc",
		"circuitBreaker.minRequests": "5",
		"circuitBreaker.cooldown":    "30",
	}, cfgSrc, cfgLabelKey)
	cb := cfg.Entrypoint.CircuitBreaker
	if cb == nil || cb.Params.Threshold != 0.5 || cb.Params.MinRequests != 5 || cb.Params.Cooldown != 30*time.Second ||
		cb.Params.MaxCooldown != 30*time.Second || cb.Params.ProbeTimeout != 30*time.Second {
		t.Fatalf("breaker %+v", cb)
	}
	if len(ds) != 1 || ds[0].Code != codeW024 || ds[0].Key != cfgLabelKey("circuitBreaker.threshold") || ds[0].Value != "abc" || ds[0].Fallback != "0.5" {
		t.Errorf("diagnostics %v", ds)
	}
	// No breaker field: no breaker; enabled=false wins over other fields.
	cfg, _ = DecodeLabels(map[string]string{"host": "a.com"}, cfgSrc, cfgLabelKey)
	if cfg.Entrypoint.CircuitBreaker != nil || cfg.Entrypoint.HealthCheck != nil {
		t.Errorf("defaults enable optional features: %+v", cfg.Entrypoint)
	}
	cfg, _ = DecodeLabels(map[string]string{"host": "a.com", "circuitBreaker.enabled": "false", "circuitBreaker.threshold": "0.2"}, cfgSrc, cfgLabelKey)
	if cfg.Entrypoint.CircuitBreaker != nil {
		t.Errorf("enabled=false ignored")
	}
	// Missing host: not routable, E002.
	cfg, ds = DecodeLabels(map[string]string{"port": "80"}, cfgSrc, cfgLabelKey)
	if cfg.Routable || len(ds) != 1 || ds[0].Code != diagnostics.MissingHost || ds[0].Severity != diagnostics.Error || ds[0].Key != cfgLabelKey("host") {
		t.Errorf("missing host: %v %v", cfg.Routable, ds)
	}
}

func TestEncodeEntrypointRoundTrip(t *testing.T) {
	bodies := []string{
		seedPayload,
		`{"name":"full","backends":[{"address":"a","port":81,"weight":0,"name":"web-1"},{"address":"b"}],
		  "created":"2026-01-02T03:04:05.000000006Z",
		  "config":{"hostnames":["a.com","*.b.com"],"path":"/api","path_regex":"^/api/v1","priority":3,"methods":["GET"],
		  "strip_prefix":true,"add_prefix":"/x","load_balancer":"p2c","backend_timeout":"1500ms","retry":{"attempts":3,"body_buffer":"1MiB"},
		  "max_request_body_bytes":"10GiB","health_check":{"path":"/hz","status":"2xx","interval":4},
		  "circuit_breaker":{"window":"60s","consecutive_failures":4,"slow_call_duration":"2s","slow_call_threshold":0.5,
		  "max_cooldown":"5m","half_open_probes":2,"successes_to_close":3,"probe_timeout":7,"failure_statuses":"502-504",
		  "success_statuses":"2xx","cooldown_jitter":0.1,"recovery_duration":"30s","mode":"shadow","response_code":429,
		  "response_body":"later","scope":"backend"}}}`,
		`{"name":"min","config":{"hostnames":["a.com"]}}`,
	}
	for _, body := range bodies {
		ep, _, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		enc, err := EncodeEntrypoint(ep)
		if err != nil {
			t.Fatal(err)
		}
		again, ds, err := DecodeEntrypoint(FormatJSON, enc, diagnostics.Source{})
		if err != nil {
			t.Fatalf("decode of encoded %s: %v", enc, err)
		}
		for _, d := range ds {
			if d.Code != diagnostics.NoBackends {
				t.Errorf("encoded form has diagnostic %v: %s", d, enc)
			}
		}
		if !reflect.DeepEqual(ep, again) {
			t.Errorf("round trip differs:\n got %+v\nwant %+v\n json %s", again, ep, enc)
		}
		enc2, _ := EncodeEntrypoint(again)
		if !bytes.Equal(enc, enc2) {
			t.Errorf("encoding is not canonical:\n%s\n%s", enc, enc2)
		}
	}
}

func TestDiagnosticSourceFilled(t *testing.T) {
	_, ds, err := DecodeEntrypoint(FormatJSON, []byte(`{"name":"app","config":{"hostnames":["a.com"]}}`), diagnostics.Source{})
	if err != nil || len(ds) == 0 {
		t.Fatal(err, ds)
	}
	if want := (diagnostics.Source{Provider: "api", ObjectID: "app", ObjectName: "app"}); ds[0].Source != want {
		t.Errorf("source %+v, want %+v", ds[0].Source, want)
	}
}

func TestParsers(t *testing.T) {
	for in, want := range map[string]time.Duration{"10": 10 * time.Second, "1500ms": 1500 * time.Millisecond, " 2m ": 2 * time.Minute} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "ten", "1.5", "99999999999999999999"} {
		if _, err := ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) accepted", in)
		}
	}
	if got := SplitList(" a, ,b,,c "); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("SplitList: %q", got)
	}
}

// A group given as a non-object ("circuit_breaker": "on") is W024 with
// "defaults" as the fallback, and the breaker is on with its defaults, as
// the diagnostic says.
func TestGroupGivenAsScalarTurnsTheFeatureOnWithDefaults(t *testing.T) {
	body := []byte(`{"name":"app","config":{"hostnames":["app.test"],"circuit_breaker":"on","health_check":true}}`)
	ep, ds, err := DecodeEntrypoint(FormatJSON, body, diagnostics.Source{Provider: SourceAPI})
	if err != nil {
		t.Fatal(err)
	}
	codes := map[diagnostics.Code]string{}
	for _, d := range ds {
		codes[d.Code] = d.Fallback
	}
	if codes[diagnostics.BadCircuitBreaker] != "defaults" || codes[diagnostics.BadHealthCheck] != "defaults" {
		t.Fatalf("diagnostics %+v, want W024 and W021 with fallback defaults", ds)
	}
	if ep.CircuitBreaker == nil || ep.CircuitBreaker.Params.Threshold != breaker.DefaultParams().Threshold {
		t.Fatalf("breaker %+v, want on with defaults", ep.CircuitBreaker)
	}
	if ep.HealthCheck == nil {
		t.Fatal("health check off, want on with defaults")
	}
}

func TestLongInvalidNameIsQuotedClipped(t *testing.T) {
	long := strings.Repeat("X", 5000)
	_, _, err := DecodeEntrypoint(FormatJSON, []byte(`{"name":"`+long+`","config":{"hostnames":["a.test"]}}`), diagnostics.Source{Provider: SourceAPI})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Status != 422 || len(ie.Message) > 300 || !strings.Contains(ie.Message, "invalid name") {
		t.Fatalf("error %v (%d bytes), want a short 422 message", err, len(fmt.Sprint(err)))
	}
}

// A health-check timeout longer than the interval runs shortened: the
// decoded entrypoint (and so the stored payload and every view) holds the
// effective value, and I004 names what was written, by labels and JSON.
func TestHealthTimeoutAdjusted(t *testing.T) {
	check := func(how string, ep Entrypoint, ds []diagnostics.Diagnostic, key, value string) {
		t.Helper()
		if ep.HealthCheck == nil || ep.HealthCheck.Timeout != 2*time.Second {
			t.Fatalf("%s: health check %+v, want timeout 2s", how, ep.HealthCheck)
		}
		got := cfgWithCode(ds, diagnostics.HealthTimeoutAdjusted)
		if len(got) != 1 || len(ds) != 1 {
			t.Fatalf("%s: want one I004, got %v", how, ds)
		}
		if g := got[0]; g.Key != key || g.Value != value || g.Fallback != "2s" || g.Severity != diagnostics.Info {
			t.Errorf("%s: got %+v, want key %q value %q fallback 2s, info", how, g, key, value)
		}
		out, err := EncodeEntrypoint(ep)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `"timeout":"2s","interval":"3s"`) {
			t.Errorf("%s: encoded %s, want the effective timeout", how, out)
		}
	}
	// The 5s default against a 3s interval.
	cfg, ds := DecodeLabels(map[string]string{"host": "app.example.com", "healthCheck.interval": "3s"}, cfgSrc, cfgLabelKey)
	check("label default", cfg.Entrypoint, ds, cfgLabelKey("healthCheck.timeout"), "5s")
	// A written timeout.
	cfg, ds = DecodeLabels(map[string]string{"host": "app.example.com", "healthCheck.interval": "3s", "healthCheck.timeout": "8"}, cfgSrc, cfgLabelKey)
	check("label", cfg.Entrypoint, ds, cfgLabelKey("healthCheck.timeout"), "8")
	body := `{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],
	  "config":{"hostnames":["app.example.com"],"health_check":{"timeout":"5s","interval":"3s"}}}`
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	check("JSON", ep, ds, "config.health_check.timeout", "5s")
	// The stored payload decodes to itself, without I004 again.
	out, _ := EncodeEntrypoint(ep)
	again, ds, err := DecodeEntrypoint(FormatJSON, out, diagnostics.Source{})
	if err != nil || len(ds) != 0 || again.HealthCheck.Timeout != 2*time.Second {
		t.Errorf("stored payload: %+v %v %v", again.HealthCheck, ds, err)
	}
}

// A bad value reported once is not reported again by a cross-field rule
// that sees the default in its place.
func TestCrossFieldRulesSeeTheFallback(t *testing.T) {
	_, ds := DecodeLabels(map[string]string{"host": "app.example.com",
		"passiveHealth.ejectTime": "10m", "passiveHealth.maxEjectTime": "later"}, cfgSrc, cfgLabelKey)
	if len(ds) != 1 || ds[0].Value != "later" {
		t.Errorf("want one W036 for the bad value, got %v", ds)
	}
	cfg, ds := DecodeLabels(map[string]string{"host": "app.example.com", "passiveHealth.ejectTime": "10m"}, cfgSrc, cfgLabelKey)
	if len(ds) != 0 || cfg.Entrypoint.PassiveHealth.MaxEjectTime != 10*time.Minute {
		t.Errorf("a default cap below ejectTime follows it silently: %v %v", cfg.Entrypoint.PassiveHealth, ds)
	}
	_, ds = DecodeLabels(map[string]string{"host": "app.example.com", "healthCheck.interval": "3s", "healthCheck.timeout": "soon"}, cfgSrc, cfgLabelKey)
	adj := cfgWithCode(ds, diagnostics.HealthTimeoutAdjusted)
	if len(ds) != 2 || len(cfgWithCode(ds, diagnostics.BadHealthCheck)) != 1 || len(adj) != 1 || adj[0].Value != "5s" {
		t.Errorf("want W021 for soon and I004 for the 5s default it fell back to, got %v", ds)
	}
}
