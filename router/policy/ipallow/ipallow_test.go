package ipallow

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
	"github.com/levee-proxy/levee/router/policy/internal/policytest"
)

func TestAllowList(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}
	for _, c := range []struct {
		name    string
		ranges  []string
		depth   int
		peer    string
		xff     []string
		want    int
		reason  string
		compile bool // New reports an error
	}{
		{name: "in v4 range", ranges: []string{"192.0.2.0/24"}, peer: "192.0.2.9:1", want: 200},
		{name: "outside", ranges: []string{"192.0.2.0/24"}, peer: "198.51.100.1:1", want: 403, reason: policy.ReasonForbiddenIP},
		{name: "single address", ranges: []string{"198.51.100.1"}, peer: "198.51.100.1:1", want: 200},
		{name: "v6 range", ranges: []string{"2001:db8::/32"}, peer: "[2001:db8::5]:1", want: 200},
		{name: "mapped v4 peer", ranges: []string{"192.0.2.0/24"}, peer: "[::ffff:192.0.2.9]:1", want: 200},
		{name: "spoofed XFF from untrusted peer", ranges: []string{"192.0.2.0/24"}, peer: "198.51.100.1:1", xff: []string{"192.0.2.9"}, want: 403, reason: policy.ReasonForbiddenIP},
		{name: "XFF from trusted proxy", ranges: []string{"192.0.2.0/24"}, peer: "10.9.0.1:1", xff: []string{"192.0.2.9"}, want: 200},
		{name: "XFF from trusted proxy, client outside", ranges: []string{"192.0.2.0/24"}, peer: "10.9.0.1:1", xff: []string{"192.0.2.9, 198.51.100.1"}, want: 403, reason: policy.ReasonForbiddenIP},
		{name: "depth 2", ranges: []string{"192.0.2.0/24"}, depth: 2, peer: "10.9.0.1:1", xff: []string{"192.0.2.9, 198.51.100.1"}, want: 200},
		{name: "garbled XFF from trusted proxy", ranges: []string{"0.0.0.0/0"}, peer: "10.9.0.1:1", xff: []string{"garbage"}, want: 403, reason: policy.ReasonForbiddenIP},
		{name: "bad CIDR denies all", ranges: []string{"192.0.2.0/24", "10.0.0.0/33"}, peer: "192.0.2.9:1", want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
		{name: "hostname denies all", ranges: []string{"example.com"}, peer: "192.0.2.9:1", want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
		{name: "empty list denies all", ranges: nil, peer: "192.0.2.9:1", want: 403, reason: policy.ReasonPolicyMisconfigured, compile: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &policytest.Recorder{}
			p, err := New(&config.IPAllowList{SourceRange: c.ranges, Depth: c.depth}, policy.Env{Route: "r", Rec: rec, TrustedProxies: trusted})
			if (err != nil) != c.compile {
				t.Fatalf("compile error %v, want error %v", err, c.compile)
			}
			res := policytest.Run(p, policytest.Request(c.peer, c.xff...))
			if res.Code != c.want || res.Reached != (c.want == 200) {
				t.Fatalf("status %d reached %v, want %d", res.Code, res.Reached, c.want)
			}
			if c.reason != "" {
				if got := res.Header.Get(policy.HeaderDiagnostic); got != c.reason {
					t.Fatalf("diagnostic %q, want %q", got, c.reason)
				}
				if len(rec.Got) != 1 || rec.Got[0] != Name+"/"+c.reason {
					t.Fatalf("counted %v", rec.Got)
				}
			} else if rec.Count() != 0 {
				t.Fatalf("counted %v", rec.Got)
			}
		})
	}
}

func BenchmarkIPAllowList(b *testing.B) {
	p, _ := New(&config.IPAllowList{SourceRange: []string{"10.0.0.0/8", "192.0.2.0/24"}}, policy.Env{})
	r := policytest.Request("192.0.2.9:1")
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	b.ReportAllocs()
	for b.Loop() {
		p.Serve(nil, r, next)
	}
}
