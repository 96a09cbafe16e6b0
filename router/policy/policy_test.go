package policy

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"
)

type fakePolicy struct {
	name   string
	stage  Stage
	refuse bool
	trace  *[]string
}

func (p *fakePolicy) Name() string { return p.name }
func (p *fakePolicy) Stage() Stage { return p.stage }
func (p *fakePolicy) Serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	*p.trace = append(*p.trace, p.name)
	if p.refuse {
		Refuser{Route: "r", Policy: p.name, Rec: rec{}}.Refuse(w, http.StatusForbidden, ReasonForbiddenIP, "no\n")
		return
	}
	next.ServeHTTP(w, r)
}

type rec struct{}

var refused []string

func (rec) Refused(route, policy, reason string) {
	refused = append(refused, route+"/"+policy+"/"+reason)
}

func TestChainRunsInStageOrder(t *testing.T) {
	var trace []string
	ch := NewChain([]Policy{
		&fakePolicy{name: "compress", stage: StageCompress, trace: &trace},
		&fakePolicy{name: "auth", stage: StageAuth, trace: &trace},
		&fakePolicy{name: "ip", stage: StageIPAllowList, trace: &trace},
		&fakePolicy{name: "rate", stage: StageRateLimit, trace: &trace},
	})
	final := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { trace = append(trace, "backend") })
	ch.Serve(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil), final)
	want := []string{"ip", "rate", "auth", "compress", "backend"}
	if !slices.Equal(trace, want) {
		t.Fatalf("order %v, want %v", trace, want)
	}
}

func TestChainRefusalStopsAndCounts(t *testing.T) {
	var trace []string
	refused = nil
	ch := NewChain([]Policy{
		&fakePolicy{name: "auth", stage: StageAuth, trace: &trace},
		&fakePolicy{name: "ip", stage: StageIPAllowList, refuse: true, trace: &trace},
	})
	reached := false
	w := httptest.NewRecorder()
	ch.Serve(w, httptest.NewRequest("GET", "/", nil), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	if reached || !slices.Equal(trace, []string{"ip"}) {
		t.Fatalf("refusal passed on: reached=%v trace=%v", reached, trace)
	}
	if w.Code != http.StatusForbidden || w.Header().Get(HeaderDiagnostic) != ReasonForbiddenIP {
		t.Fatalf("answer %d %q", w.Code, w.Header().Get(HeaderDiagnostic))
	}
	if !slices.Equal(refused, []string{"r/ip/forbidden-ip"}) {
		t.Fatalf("counted %v", refused)
	}
}

func TestEmptyChain(t *testing.T) {
	if !NewChain(nil).Empty() {
		t.Fatal("nil chain not empty")
	}
	reached := false
	NewChain(nil).Serve(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil), http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	if !reached {
		t.Fatal("empty chain did not call final")
	}
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct {
		name, peer string
		xff        []string
		depth      int
		want       string // "" = not ok
	}{
		{"untrusted peer ignores header", "192.0.2.1:5", []string{"203.0.113.9"}, 0, "192.0.2.1"},
		{"trusted peer without header", "10.0.0.1:5", nil, 0, "10.0.0.1"},
		{"trusted peer: rightmost untrusted", "10.0.0.1:5", []string{"198.51.100.1, 203.0.113.9, 10.0.0.2"}, 0, "203.0.113.9"},
		{"two header lines", "10.0.0.1:5", []string{"198.51.100.1", "203.0.113.9"}, 0, "203.0.113.9"},
		{"all trusted: leftmost", "10.0.0.1:5", []string{"10.1.1.1, 10.2.2.2"}, 0, "10.1.1.1"},
		{"depth 2", "10.0.0.1:5", []string{"198.51.100.1, 203.0.113.9, 10.0.0.2"}, 2, "203.0.113.9"},
		{"depth beyond header", "10.0.0.1:5", []string{"203.0.113.9"}, 3, ""},
		{"depth from untrusted peer ignored", "192.0.2.1:5", []string{"203.0.113.9"}, 1, "192.0.2.1"},
		{"garbage entry", "10.0.0.1:5", []string{"not-an-ip"}, 0, ""},
		{"entry with port", "10.0.0.1:5", []string{"203.0.113.9:443"}, 0, "203.0.113.9"},
		{"mapped v4 peer", "[::ffff:192.0.2.1]:5", nil, 0, "192.0.2.1"},
		{"bad peer", "pipe", nil, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.peer
			for _, v := range c.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			got, ok := ClientIP(r, trusted, c.depth)
			if c.want == "" {
				if ok {
					t.Fatalf("got %v, want refusal", got)
				}
				return
			}
			if !ok || got.String() != c.want {
				t.Fatalf("got %v %v, want %s", got, ok, c.want)
			}
		})
	}
}
