package config

import (
	"encoding/json"
	"fmt"
	"time"
)

// The wire types below fix the canonical field order and forms: durations
// as Go duration strings, status lists as "500,502-504", protocol "Http"
// as in Sōzune's payloads.

type wireEntrypoint struct {
	Name     string        `json:"name"`
	Protocol string        `json:"protocol"`
	Backends []wireBackend `json:"backends"`
	Config   wireConfig    `json:"config"`
	Created  string        `json:"created,omitempty"`
}

type wireBackend struct {
	Address string `json:"address"`
	Port    int    `json:"port"`
	Weight  int    `json:"weight"`
	Name    string `json:"name,omitempty"`
}

type wireConfig struct {
	Hostnames      []string     `json:"hostnames"`
	Path           string       `json:"path"`
	PathCaseInsens bool         `json:"path_case_insensitive,omitempty"`
	PathRegex      string       `json:"path_regex,omitempty"`
	Priority       int          `json:"priority"`
	Methods        []string     `json:"methods,omitempty"`
	StripPrefix    bool         `json:"strip_prefix"`
	AddPrefix      string       `json:"add_prefix,omitempty"`
	LoadBalancer   string       `json:"load_balancer"`
	BackendTimeout string       `json:"backend_timeout"`
	Retry          wireRetry    `json:"retry"`
	MaxRequestBody int64        `json:"max_request_body_bytes,omitempty"`
	HealthCheck    *wireHealth  `json:"health_check,omitempty"`
	PassiveHealth  *wirePassive `json:"passive_health,omitempty"`
	CircuitBreaker *wireBreaker `json:"circuit_breaker,omitempty"`
	wireAccess
	wireTransform
	TLS       *wireTLS `json:"tls,omitempty"`
	Listeners []string `json:"listeners,omitempty"`
	Scheme    string   `json:"scheme,omitempty"`
}

type wireTLS struct {
	Enabled  bool `json:"enabled"`
	Redirect bool `json:"redirect"`
	// HSTS is the max-age in seconds, as the header writes it.
	HSTS                  int64 `json:"hsts"`
	HSTSIncludeSubdomains bool  `json:"hsts_include_subdomains,omitempty"`
	HSTSPreload           bool  `json:"hsts_preload,omitempty"`
	// The backend side (BackendTLS).
	ServerName         string `json:"server_name,omitempty"`
	CA                 string `json:"ca,omitempty"`
	ClientCert         string `json:"client_cert,omitempty"`
	InsecureSkipVerify bool   `json:"insecure_skip_verify,omitempty"`
}

type wireRetry struct {
	Attempts   int   `json:"attempts"`
	BodyBuffer int64 `json:"body_buffer,omitempty"`
}

type wireHealth struct {
	Path     string `json:"path"`
	Status   string `json:"status"`
	Timeout  string `json:"timeout"`
	Interval string `json:"interval"`
	Rise     int    `json:"rise"`
	Fall     int    `json:"fall"`
}

type wirePassive struct {
	ConsecutiveFailures int     `json:"consecutive_failures"`
	EjectTime           string  `json:"eject_time"`
	MaxEjectTime        string  `json:"max_eject_time"`
	MaxEjectedShare     float64 `json:"max_ejected_share"`
}

type wireBreaker struct {
	Threshold           float64 `json:"threshold"`
	MinRequests         int     `json:"min_requests"`
	Window              string  `json:"window"`
	ConsecutiveFailures int     `json:"consecutive_failures"`
	SlowCallDuration    string  `json:"slow_call_duration"`
	SlowCallThreshold   float64 `json:"slow_call_threshold"`
	Cooldown            string  `json:"cooldown"`
	MaxCooldown         string  `json:"max_cooldown"`
	HalfOpenProbes      int     `json:"half_open_probes"`
	SuccessesToClose    int     `json:"successes_to_close"`
	ProbeTimeout        string  `json:"probe_timeout"`
	FailureStatuses     string  `json:"failure_statuses"`
	SuccessStatuses     string  `json:"success_statuses,omitempty"`
	CooldownJitter      float64 `json:"cooldown_jitter"`
	RecoveryDuration    string  `json:"recovery_duration"`
	Mode                string  `json:"mode"`
	ResponseCode        int     `json:"response_code"`
	ResponseBody        string  `json:"response_body"`
	Scope               string  `json:"scope"`
	// The fallback fields (model_fallback.go).
	Fallback                 string `json:"fallback"`
	FallbackStatus           int    `json:"fallback_status"`
	ServeStale               string `json:"serve_stale"`
	ServeStaleForCredentials bool   `json:"serve_stale_for_credentials"`
}

// EncodeEntrypoint renders ep as canonical JSON in the API payload shape,
// every field explicit. DecodeEntrypoint accepts it back and yields ep again
// (for an entrypoint that came out of the validator), which is what makes it
// fit for persistence and API responses.
func EncodeEntrypoint(ep Entrypoint) ([]byte, error) {
	w := wireEntrypoint{
		Name:     ep.Name,
		Protocol: "Http",
		Backends: make([]wireBackend, 0, len(ep.Backends)),
		Config: wireConfig{
			Hostnames:      ep.Hosts,
			Path:           ep.Path,
			PathCaseInsens: ep.PathCaseInsensitive,
			PathRegex:      ep.PathRegex,
			Priority:       ep.Priority,
			Methods:        ep.Methods,
			StripPrefix:    ep.StripPrefix,
			AddPrefix:      ep.AddPrefix,
			LoadBalancer:   ep.LoadBalancer,
			BackendTimeout: ep.BackendTimeout.String(),
			Retry:          wireRetry{Attempts: ep.Retry.Attempts, BodyBuffer: ep.Retry.BodyBuffer},
			MaxRequestBody: ep.MaxRequestBodyBytes,
		},
	}
	w.Config.wireTransform = encodeTransform(ep.Transform)
	if w.Config.Hostnames == nil {
		w.Config.Hostnames = []string{}
	}
	if !ep.Created.IsZero() {
		w.Created = ep.Created.Format(time.RFC3339Nano)
	}
	for _, b := range ep.Backends {
		w.Backends = append(w.Backends, wireBackend(b))
	}
	if h := ep.HealthCheck; h != nil {
		w.Config.HealthCheck = &wireHealth{Path: h.Path, Status: h.Status.String(), Timeout: h.Timeout.String(),
			Interval: h.Interval.String(), Rise: h.Rise, Fall: h.Fall}
	}
	// The validator fills every passive-health field; an entrypoint built
	// without it leaves them zero, which is not a payload value, so the
	// group is left out and the request path's defaults apply.
	if ph := ep.PassiveHealth; !ph.IsZero() {
		w.Config.PassiveHealth = &wirePassive{ConsecutiveFailures: ph.ConsecutiveFailures, EjectTime: ph.EjectTime.String(),
			MaxEjectTime: ph.MaxEjectTime.String(), MaxEjectedShare: ph.MaxEjectedShare}
	}
	if cb := ep.CircuitBreaker; cb != nil {
		p := cb.Params
		w.Config.CircuitBreaker = &wireBreaker{
			Threshold: p.Threshold, MinRequests: p.MinRequests, Window: p.Window.String(),
			ConsecutiveFailures: p.ConsecutiveFailures, SlowCallDuration: p.SlowCallDuration.String(),
			SlowCallThreshold: p.SlowCallThreshold, Cooldown: p.Cooldown.String(), MaxCooldown: p.MaxCooldown.String(),
			HalfOpenProbes: p.HalfOpenProbes, SuccessesToClose: p.SuccessesToClose, ProbeTimeout: p.ProbeTimeout.String(),
			FailureStatuses: p.FailureStatuses.String(), SuccessStatuses: p.SuccessStatuses.String(),
			CooldownJitter: p.CooldownJitter, RecoveryDuration: p.RecoveryDuration.String(), Mode: p.Mode.String(),
			ResponseCode: cb.ResponseCode, ResponseBody: cb.ResponseBody, Scope: cb.Scope,
		}
		encodeFallback(w.Config.CircuitBreaker, cb.Fallback)
	}
	w.Config.wireAccess = encodeAccess(ep.Access)
	if bt := ep.BackendTLS; !ep.TLS.IsZero() || !bt.IsZero() {
		w.Config.TLS = &wireTLS{Enabled: ep.TLS.Enabled, Redirect: ep.TLS.Redirect, HSTS: int64(ep.TLS.HSTS / time.Second),
			HSTSIncludeSubdomains: ep.TLS.HSTSIncludeSubdomains, HSTSPreload: ep.TLS.HSTSPreload,
			ServerName: bt.ServerName, CA: bt.CA, ClientCert: bt.ClientCert, InsecureSkipVerify: bt.InsecureSkipVerify}
	}
	if ep.Scheme != SchemeHTTP {
		w.Config.Scheme = ep.Scheme
	}
	w.Config.Listeners = ep.Listeners
	out, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("encode entrypoint %q: %w", ep.Name, err)
	}
	return out, nil
}
