package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

func init() {
	fieldCases = append(fieldCases, fieldCase{field: "policies", get: func(d cfgDecoded) any { return d.ep.Policies },
		valid: []validCase{{"office-only,compress", "", []string{"office-only", "compress"}},
			{"Office-Only, compress,office-only", "", []string{"office-only", "compress"}}}})
}

// policyOf decodes the labels of one named policy declared on container
// obj at created.
func policyOf(t *testing.T, name, obj string, created time.Time, labels map[string]string) Policy {
	t.Helper()
	src := diagnostics.Source{Provider: SourceDocker, ObjectID: obj, ObjectName: obj, Service: "policy " + name}
	p, ds := DecodePolicyLabels(name, labels, src, func(f string) string { return "levee.policy." + name + "." + f })
	for _, d := range ds {
		t.Logf("policy %s: %s %s %s", name, d.Code, d.Key, d.Message)
	}
	p.Source, p.Created = SourceDocker, created
	return p
}

// routeOf decodes one route's labels.
func routeOf(t *testing.T, id string, labels map[string]string) Entrypoint {
	t.Helper()
	labels["host"] = id + ".example.com"
	cfg, ds := DecodeLabels(labels, cfgSrc, func(f string) string { return "levee.http." + id + "." + f })
	if !cfg.Routable {
		t.Fatalf("route %s not routable: %v", id, ds)
	}
	ep := cfg.Entrypoint
	ep.ID, ep.Name, ep.Source = id, id, SourceDocker
	return ep
}

func codesOf(ds []diagnostics.Diagnostic) []diagnostics.Code {
	var out []diagnostics.Code
	for _, d := range ds {
		out = append(out, d.Code)
	}
	return out
}

func TestResolvePolicies(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	office := policyOf(t, "office-only", "proxy", t0, map[string]string{
		"ipAllowList.sourceRange": "10.0.0.0/8", "headers.customResponseHeaders.X-Policy": "office", "maxRequestBodyBytes": "1MiB"})
	auth := policyOf(t, "auth", "proxy", t0, map[string]string{"basicAuth.users": testBcrypt})
	compress := policyOf(t, "compress", "proxy", t0, map[string]string{"compress": "true", "headers.customResponseHeaders.X-Policy": "compress"})
	broken := policyOf(t, "broken", "proxy", t0, map[string]string{"basicAuth.userz": testBcrypt, "compress": "true"})
	all := []Policy{office, auth, compress, broken}

	cases := []struct {
		name   string
		route  map[string]string
		pols   []Policy
		check  func(t *testing.T, ep Entrypoint)
		codes  []diagnostics.Code
		denies bool
	}{
		{name: "no references: unchanged", route: map[string]string{"compress": "true"}, pols: all,
			check: func(t *testing.T, ep Entrypoint) {
				if ep.Access.IPAllowList != nil || ep.Transform.Headers != nil {
					t.Errorf("route without policies got %+v", ep.Access)
				}
			}},
		{name: "groups are filled from the policy", route: map[string]string{"policies": "office-only"}, pols: all,
			check: func(t *testing.T, ep Entrypoint) {
				if ep.Access.IPAllowList == nil || !slices.Equal(ep.Access.IPAllowList.SourceRange, []string{"10.0.0.0/8"}) {
					t.Errorf("ipAllowList = %+v, want the policy's", ep.Access.IPAllowList)
				}
				if ep.MaxRequestBodyBytes != 1<<20 {
					t.Errorf("maxRequestBodyBytes = %d, want 1MiB", ep.MaxRequestBodyBytes)
				}
			}},
		{name: "the route's own group wins", route: map[string]string{"policies": "office-only", "ipAllowList.sourceRange": "192.0.2.0/24", "maxRequestBodyBytes": "2MiB"}, pols: all,
			check: func(t *testing.T, ep Entrypoint) {
				if got := ep.Access.IPAllowList.SourceRange; !slices.Equal(got, []string{"192.0.2.0/24"}) {
					t.Errorf("sourceRange = %v, want the route's own", got)
				}
				if ep.MaxRequestBodyBytes != 2<<20 {
					t.Errorf("maxRequestBodyBytes = %d, want the route's 2MiB", ep.MaxRequestBodyBytes)
				}
				if ep.Transform.Headers == nil || ep.Transform.Headers.Response["X-Policy"] != "office" {
					t.Errorf("headers = %+v, want the policy's (the route has none)", ep.Transform.Headers)
				}
			}},
		{name: "the earlier policy wins a group both have", route: map[string]string{"policies": "compress,office-only"}, pols: all,
			check: func(t *testing.T, ep Entrypoint) {
				if got := ep.Transform.Headers.Response["X-Policy"]; got != "compress" {
					t.Errorf("X-Policy = %q, want compress's (first in the list)", got)
				}
				if ep.Transform.Compress == nil || ep.Access.IPAllowList == nil {
					t.Errorf("want compress from the first policy and the allow-list from the second: %+v %+v", ep.Transform.Compress, ep.Access.IPAllowList)
				}
			}},
		{name: "unknown reference denies with did-you-mean", route: map[string]string{"policies": "office-onyl"}, pols: all,
			codes: []diagnostics.Code{diagnostics.UnknownPolicy}, denies: true},
		{name: "unknown reference denies although the route has its own auth", route: map[string]string{"policies": "auth,nope", "basicAuth.users": testBcrypt}, pols: all,
			codes: []diagnostics.Code{diagnostics.UnknownPolicy}, denies: true},
		{name: "a policy with an unread access key denies", route: map[string]string{"policies": "broken"}, pols: all, denies: true,
			check: func(t *testing.T, ep Entrypoint) {
				if ep.Transform.Compress == nil {
					t.Errorf("the broken policy's other groups still apply")
				}
			}},
		{name: "a broken access policy denies even when the route has that group", route: map[string]string{"policies": "broken", "basicAuth.users": testBcrypt}, pols: all, denies: true},
		{name: "no policy declared at all", route: map[string]string{"policies": "auth"}, pols: nil,
			codes: []diagnostics.Code{diagnostics.UnknownPolicy}, denies: true},
		{name: "a reference that is no name", route: map[string]string{"policies": "Office Only!"}, pols: all,
			codes: []diagnostics.Code{diagnostics.UnknownPolicy}, denies: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep := routeOf(t, "app", tc.route)
			out, ds := ResolvePolicies([]Entrypoint{ep}, tc.pols)
			if got := codesOf(ds); !slices.Equal(got, tc.codes) {
				t.Errorf("codes = %v, want %v (%v)", got, tc.codes, ds)
			}
			if denies := len(out[0].Access.Unread) > 0; denies != tc.denies {
				t.Errorf("denies = %v (unread %v), want %v", denies, out[0].Access.Unread, tc.denies)
			}
			if tc.check != nil {
				tc.check(t, out[0])
			}
		})
	}
}

func TestUnknownPolicySuggestsTheClosest(t *testing.T) {
	t0 := time.Now()
	pols := []Policy{policyOf(t, "office-only", "proxy", t0, map[string]string{"ipAllowList.sourceRange": "10.0.0.0/8"})}
	_, ds := ResolvePolicies([]Entrypoint{routeOf(t, "app", map[string]string{"policies": "office-onyl"})}, pols)
	if len(ds) != 1 || ds[0].Code != diagnostics.UnknownPolicy || !strings.Contains(ds[0].Hint, "office-only") || ds[0].Value != "office-onyl" {
		t.Fatalf("diagnostics = %+v, want one E007 for office-onyl suggesting office-only", ds)
	}
}

func TestPolicyDeclaredTwice(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	route := func() []Entrypoint { return []Entrypoint{routeOf(t, "app", map[string]string{"policies": "shared"})} }
	t.Run("same content: one policy, no diagnostic", func(t *testing.T) {
		a := policyOf(t, "shared", "a", t0, map[string]string{"ipAllowList.sourceRange": "10.0.0.0/8"})
		b := policyOf(t, "shared", "b", t0.Add(time.Hour), map[string]string{"ipAllowList.sourceRange": "10.0.0.0/8"})
		out, ds := ResolvePolicies(route(), []Policy{b, a})
		if len(ds) != 0 || len(out[0].Access.Unread) != 0 || out[0].Access.IPAllowList == nil {
			t.Fatalf("diagnostics %v, unread %v, allow-list %+v", ds, out[0].Access.Unread, out[0].Access.IPAllowList)
		}
	})
	t.Run("different access groups: every route using it denies", func(t *testing.T) {
		a := policyOf(t, "shared", "a", t0, map[string]string{"ipAllowList.sourceRange": "10.0.0.0/8"})
		b := policyOf(t, "shared", "b", t0.Add(time.Hour), map[string]string{"ipAllowList.sourceRange": "192.168.0.0/16"})
		for _, order := range [][]Policy{{a, b}, {b, a}} {
			out, ds := ResolvePolicies(route(), order)
			if got := codesOf(ds); !slices.Equal(got, []diagnostics.Code{diagnostics.PolicyConflict}) || ds[0].Source.ObjectID != "b" {
				t.Errorf("diagnostics = %+v, want one W039 on the younger declaration b", ds)
			}
			if len(out[0].Access.Unread) == 0 {
				t.Errorf("route using a conflicting access policy does not deny")
			}
		}
	})
	t.Run("different other groups: the oldest applies", func(t *testing.T) {
		a := policyOf(t, "shared", "a", t0, map[string]string{"headers.customResponseHeaders.X-From": "a"})
		b := policyOf(t, "shared", "b", t0.Add(-time.Hour), map[string]string{"headers.customResponseHeaders.X-From": "b"})
		for _, order := range [][]Policy{{a, b}, {b, a}} {
			out, ds := ResolvePolicies(route(), order)
			if got := codesOf(ds); !slices.Equal(got, []diagnostics.Code{diagnostics.PolicyConflict}) || ds[0].Source.ObjectID != "a" {
				t.Errorf("diagnostics = %+v, want one W039 on the younger declaration a", ds)
			}
			if got := out[0].Transform.Headers.Response["X-From"]; got != "b" || len(out[0].Access.Unread) != 0 {
				t.Errorf("X-From = %q (unread %v), want b, the oldest, and no deny", got, out[0].Access.Unread)
			}
		}
	})
}

func TestPolicyLabelsKeepOnlyPolicyGroups(t *testing.T) {
	src := diagnostics.Source{Provider: SourceDocker, ObjectID: "c", ObjectName: "c"}
	p, ds := DecodePolicyLabels("p", map[string]string{
		"host": "x.example.com", "retry.attempts": "3", "cors.allowOrigins": "https://a.example.com", "basicauh.users": testBcrypt,
	}, src, func(f string) string { return "levee.policy.p." + f })
	got := codesOf(ds)
	want := []diagnostics.Code{diagnostics.MisspelledAccessPolicy, diagnostics.NotAPolicyField, diagnostics.NotAPolicyField}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("codes = %v, want %v: %v", got, want, ds)
	}
	if p.Transform.CORS == nil || len(p.Access.Unread) != 1 {
		t.Errorf("policy = %+v: want CORS and the unread access key", p)
	}
}

func TestPolicyPayloadRoundTrips(t *testing.T) {
	for _, format := range []Format{FormatJSON, FormatYAML} {
		body := `{"name":"office-only","config":{"ip_allow_list":{"source_range":["10.0.0.0/8"]},"compress":{"enabled":true},"max_request_body_bytes":"1MiB","basic_authh":{"users":"x"}}}`
		if format == FormatYAML {
			body = "name: office-only\nconfig:\n  ip_allow_list:\n    source_range: [10.0.0.0/8]\n  compress:\n    enabled: true\n  max_request_body_bytes: 1MiB\n  basic_authh:\n    users: x\n"
		}
		p, ds, err := DecodePolicy(format, []byte(body), diagnostics.Source{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Access.IPAllowList == nil || p.Transform.Compress == nil || p.MaxRequestBodyBytes != 1<<20 || len(p.Access.Unread) != 1 {
			t.Fatalf("decoded %+v (%v)", p, ds)
		}
		enc, err := EncodePolicy(p)
		if err != nil {
			t.Fatal(err)
		}
		q, _, err := DecodePolicy(FormatJSON, enc, diagnostics.Source{})
		if err != nil {
			t.Fatal(err)
		}
		if !q.sameContent(p) || q.Name != p.Name {
			t.Errorf("round trip changed the policy:\n%s\n%+v\n%+v", enc, p, q)
		}
	}
	if _, _, err := DecodePolicy(FormatJSON, []byte(`{"name":"Bad Name","config":{}}`), diagnostics.Source{}); err == nil {
		t.Errorf("a bad name was accepted")
	}
}

// A named policy may hold error pages; a route using it gets them, and a
// route's own errors group wins over the policy's.
func TestNamedPolicyCarriesErrorPages(t *testing.T) {
	p := policyOf(t, "pages", "c1", time.Unix(1, 0), map[string]string{"errors.status": "500-599", "errors.route": "pages"})
	if p.Transform.Errors == nil {
		t.Fatal("policy has no errors group")
	}
	uses := routeOf(t, "app", map[string]string{"policies": "pages"})
	own := routeOf(t, "own", map[string]string{"policies": "pages", "errors.status": "404", "errors.route": "other"})
	eps, ds := ResolvePolicies([]Entrypoint{uses, own}, []Policy{p})
	for _, d := range ds {
		t.Errorf("unexpected diagnostic %s %s", d.Code, d.Message)
	}
	if e := eps[0].Transform.Errors; e == nil || e.Route != "pages" {
		t.Errorf("app: errors %+v, want the policy's (route pages)", e)
	}
	if e := eps[1].Transform.Errors; e == nil || e.Route != "other" {
		t.Errorf("own: errors %+v, want the route's own (route other)", e)
	}
}
