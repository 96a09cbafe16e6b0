//go:build kubernetes

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// apiServerStub answers the provider's lists with fixed objects and holds
// its watches open; refuse turns every request into 403 Forbidden, as an
// API server answers a service account without RBAC, and drop ends the
// open watches (the informers relist).
type apiServerStub struct {
	lists  map[string][]byte // by URL path
	refuse atomic.Bool

	mu   sync.Mutex
	drop chan struct{}
}

func (s *apiServerStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("sendInitialEvents") == "true" {
		// A server without streamed initial lists: the client lists.
		writeStatus(w, http.StatusBadRequest, "BadRequest", "sendInitialEvents is not supported")
		return
	}
	body, ok := s.lists[r.URL.Path]
	switch {
	case !ok:
		writeStatus(w, http.StatusNotFound, "NotFound", "the server could not find the requested resource")
	case s.refuse.Load():
		writeStatus(w, http.StatusForbidden, "Forbidden", fmt.Sprintf("%s is forbidden: User \"system:serviceaccount:levee:levee\" cannot list it", r.URL.Path))
	case q.Get("watch") == "true" || q.Get("watch") == "1":
		s.mu.Lock()
		drop := s.drop
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-drop:
		}
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

// dropWatches ends the watches open now.
func (s *apiServerStub) dropWatches() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.drop)
	s.drop = make(chan struct{})
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Code: int32(code), Reason: metav1.StatusReason(reason), Message: msg})
}

func listJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newAPIServerStub serves one Ingress with three paths: /api to the
// Service app, whose one ready endpoint is backend, /gone to a Service
// that does not exist and /static to a resource (a bucket); its default
// backend is the Service fallback, whose one ready endpoint is fallback.
func newAPIServerStub(t *testing.T, backend, fallback string) *apiServerStub {
	prefix := networkingv1.PathTypePrefix
	path := func(p, svc string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: p, PathType: &prefix, Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: svc, Port: networkingv1.ServiceBackendPort{Name: "http"}}}}
	}
	bucket, group := path("/static", ""), "k8s.example.com"
	bucket.Backend = networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "StorageBucket", Name: "assets"}}
	def := path("/", "fallback").Backend
	class, portName := "levee", "http"
	rv := metav1.ListMeta{ResourceVersion: "1"}
	svc := func(name string) corev1.Service {
		return corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, ResourceVersion: "1"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
	}
	endpoints := func(svc, addr string) discoveryv1.EndpointSlice {
		host, portText, _ := net.SplitHostPort(addr)
		port, _ := strconv.Atoi(portText)
		port32 := int32(port)
		return discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "shop", Name: svc + "-x1", ResourceVersion: "1", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port32}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}}},
		}
	}
	return &apiServerStub{drop: make(chan struct{}), lists: map[string][]byte{
		"/apis/networking.k8s.io/v1/ingresses": listJSON(t, networkingv1.IngressList{
			TypeMeta: metav1.TypeMeta{Kind: "IngressList", APIVersion: "networking.k8s.io/v1"}, ListMeta: rv,
			Items: []networkingv1.Ingress{{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", ResourceVersion: "1"},
				Spec: networkingv1.IngressSpec{IngressClassName: &class, DefaultBackend: &def, Rules: []networkingv1.IngressRule{{Host: "shop.example.com",
					IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
						Paths: []networkingv1.HTTPIngressPath{path("/api", "app"), path("/gone", "gone"), bucket}}}}}}}},
		}),
		"/api/v1/services": listJSON(t, corev1.ServiceList{
			TypeMeta: metav1.TypeMeta{Kind: "ServiceList", APIVersion: "v1"}, ListMeta: rv,
			Items: []corev1.Service{svc("app"), svc("fallback")},
		}),
		"/apis/discovery.k8s.io/v1/endpointslices": listJSON(t, discoveryv1.EndpointSliceList{
			TypeMeta: metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: "discovery.k8s.io/v1"}, ListMeta: rv,
			Items: []discoveryv1.EndpointSlice{endpoints("app", backend), endpoints("fallback", fallback)},
		}),
	}}
}

// kubeconfig writes a kubeconfig naming the server.
func kubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig.yaml")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: stub, cluster: {server: %q}}]
users: [{name: stub, user: {}}]
contexts: [{name: stub, context: {cluster: stub, user: stub}}]
current-context: stub
`, server)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// kubernetesProvider is the kubernetes entry of /ready.
func kubernetesProvider(a *app) (code int, state, errText string, err error) {
	rec := httptest.NewRecorder()
	a.api.ServeHTTP(rec, apiRequest("/ready"))
	var body struct {
		Providers []struct{ Name, State, Error string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		return 0, "", "", fmt.Errorf("/ready body %q: %w", rec.Body, err)
	}
	for _, p := range body.Providers {
		if p.Name == "kubernetes" {
			return rec.Code, p.State, p.Error, nil
		}
	}
	return 0, "", "", fmt.Errorf("/ready lists no kubernetes provider: %s", rec.Body)
}

// proxyGet is a request for shop.example.com through the proxy.
func proxyGet(a *app, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "http://shop.example.com"+path, nil)
	a.proxy.ServeHTTP(rec, req)
	return rec
}

func metricsBody(a *app) string {
	rec := httptest.NewRecorder()
	a.api.ServeHTTP(rec, apiRequest("/metrics"))
	return rec.Body.String()
}

// Against an API server: a path whose Service does not exist answers 503
// no-healthy-backend with W008 listed, and so does a resource path with
// W020; the Service path is served, and the default backend takes the
// paths no rule matches (not those of the failing rules); when the
// server refuses the provider (403 on the relist after its watches end),
// /ready and /metrics say it is disconnected, with the error, while the
// routes keep serving; once it answers again it is connected, and
// levee_provider_reconnects_total counts the recovery.
func TestBuildKubernetesBackendsAndConnection(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "app") }))
	defer backend.Close()
	fallback := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "fallback") }))
	defer fallback.Close()
	stub := newAPIServerStub(t, backend.Listener.Addr().String(), fallback.Listener.Addr().String())
	apiServer := httptest.NewServer(stub)
	defer apiServer.Close()

	cfg, err := parseServeFlags([]string{"--docker=false", "--kubernetes", "--kubernetes-kubeconfig", kubeconfig(t, apiServer.URL),
		"--state-file", filepath.Join(t.TempDir(), "state.json")}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := build(ctx, cfg, zerolog.Nop(), prometheus.NewRegistry())
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, background := range a.background {
		wg.Add(1)
		go func() { defer wg.Done(); background(ctx) }()
	}
	defer func() { cancel(); wg.Wait() }()

	dockertest.Eventually(t, 30*time.Second, func() error {
		code, state, _, err := kubernetesProvider(a)
		if err == nil && (code != http.StatusOK || state != "connected") {
			err = fmt.Errorf("/ready %d with kubernetes %s, want 200 connected", code, state)
		}
		if rec := proxyGet(a, "/api"); err == nil && rec.Code != http.StatusOK {
			err = fmt.Errorf("/api answered %d %q", rec.Code, rec.Body)
		}
		return err
	})
	for _, p := range []string{"/gone", "/gone/x", "/static", "/static/logo.png"} {
		rec := proxyGet(a, p)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("X-Levee-Diagnostic") != "no-healthy-backend" {
			t.Fatalf("%s answered %d %q (diagnostic %q), want 503 no-healthy-backend", p, rec.Code, rec.Body, rec.Header().Get("X-Levee-Diagnostic"))
		}
	}
	for _, p := range []string{"/", "/elsewhere", "/apix", "/gonex"} {
		if rec := proxyGet(a, p); rec.Code != http.StatusOK || rec.Body.String() != "fallback" {
			t.Fatalf("%s answered %d %q, want the default backend", p, rec.Code, rec.Body)
		}
	}
	diags := httptest.NewRecorder()
	a.api.ServeHTTP(diags, apiRequest("/diagnostics"))
	if b := diags.Body.String(); !strings.Contains(b, `"W008"`) || !strings.Contains(b, "shop/web") || !strings.Contains(b, "Service shop/gone not found") {
		t.Fatalf("/diagnostics lacks W008 for shop/web: %s", b)
	}
	if b := diags.Body.String(); !strings.Contains(b, `"W020"`) || !strings.Contains(b, "StorageBucket assets (apiGroup k8s.example.com)") {
		t.Fatalf("/diagnostics lacks W020 for the bucket of shop/web: %s", b)
	}
	if m := metricsBody(a); !strings.Contains(m, `levee_provider_reconnects_total{provider="kubernetes"} 0`) {
		t.Errorf("/metrics lacks levee_provider_reconnects_total{provider=\"kubernetes\"} 0 before any outage")
	}

	stub.refuse.Store(true)
	stub.dropWatches()
	dockertest.Eventually(t, 30*time.Second, func() error {
		code, state, errText, err := kubernetesProvider(a)
		if err == nil && (code != http.StatusOK || state != "disconnected" || !strings.Contains(errText, "forbidden")) {
			err = fmt.Errorf("/ready %d with kubernetes %s %q, want 200 (synced before) disconnected with the 403", code, state, errText)
		}
		return err
	})
	if m := metricsBody(a); !strings.Contains(m, `levee_provider_connected{provider="kubernetes"} 0`) ||
		!strings.Contains(m, `levee_provider_state{provider="kubernetes",state="disconnected"} 1`) {
		t.Errorf("/metrics while refused lacks the disconnected kubernetes provider")
	}
	if rec := proxyGet(a, "/api"); rec.Code != http.StatusOK || rec.Body.String() != "app" {
		t.Fatalf("/api while disconnected answered %d %q, want the route last read serving", rec.Code, rec.Body)
	}

	stub.refuse.Store(false)
	dockertest.Eventually(t, 30*time.Second, func() error {
		_, state, errText, err := kubernetesProvider(a)
		if err == nil && (state != "connected" || errText != "") {
			err = fmt.Errorf("kubernetes %s %q, want connected", state, errText)
		}
		return err
	})
	if m := metricsBody(a); !strings.Contains(m, `levee_provider_connected{provider="kubernetes"} 1`) ||
		!strings.Contains(m, `levee_provider_reconnects_total{provider="kubernetes"} 1`) {
		t.Errorf("/metrics once answered lacks levee_provider_connected{provider=\"kubernetes\"} 1 and one reconnection")
	}
}
