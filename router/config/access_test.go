package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/levee-proxy/levee/diagnostics"
)

const testBcrypt = "admin:$2y$05$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC"

const denies = "route denies every request"

func init() { fieldCases = append(fieldCases, accessFieldCases...) }

func accessOf(d cfgDecoded) AccessPolicies { return d.ep.Access }

// accessFieldCases are the access policies' rows of TestFieldTable.
var accessFieldCases = []fieldCase{
	{field: "basicAuth.users", get: func(d cfgDecoded) any { return accessOf(d).BasicAuth.Users },
		valid: []validCase{{testBcrypt, "", []string{testBcrypt}}, {testBcrypt + "," + strings.Replace(testBcrypt, "admin", "bob", 1), "", []string{testBcrypt, strings.Replace(testBcrypt, "admin", "bob", 1)}}},
		invalid: []invalidCase{
			{label: "admin:$1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/", code: diagnostics.BadBasicAuth, fallback: denies, value: "admin:$1$H…"},
			{label: "admin:$apr1$H6uskkkW$short", code: diagnostics.BadBasicAuth, fallback: denies, value: "admin:$apr…"},
			{label: "admin:$2y$31$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC", code: diagnostics.BadBasicAuth, fallback: denies, value: "admin:$2y$…"},
			{label: "admin:$2y$15$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC", code: diagnostics.BadBasicAuth, fallback: denies, value: "admin:$2y$…"},
			{label: "admin:secret", code: diagnostics.BadBasicAuth, fallback: denies, value: "admin:secr…"},
			{label: "{SHA}abc", code: diagnostics.BadBasicAuth, fallback: denies, value: "(not name:hash)"},
			{label: "admin:$2y$03$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC", code: diagnostics.BadBasicAuth, fallback: denies, value: "admin:$2y$…"},
		}},
	{field: "basicAuth.usersFile", get: func(d cfgDecoded) any { return accessOf(d).BasicAuth.UsersFile },
		valid: []validCase{{"/etc/levee/htpasswd", "", "/etc/levee/htpasswd"}}},
	{field: "basicAuth.realm", get: func(d cfgDecoded) any { return accessOf(d).BasicAuth.Realm },
		valid:   []validCase{{"admin area", "", "admin area"}},
		invalid: []invalidCase{{label: `a"b`, code: diagnostics.BadBasicAuth}}},
	{field: "basicAuth.removeHeader", get: func(d cfgDecoded) any { return accessOf(d).BasicAuth.RemoveHeader },
		valid:   []validCase{{"true", "true", true}, {"false", "false", false}},
		invalid: []invalidCase{{label: "maybe", code: diagnostics.BadBasicAuth}}},
	{field: "forwardAuth.address", get: func(d cfgDecoded) any { return accessOf(d).ForwardAuth.Address },
		valid: []validCase{{"http://auth:9000/verify", "", "http://auth:9000/verify"}, {" https://auth.example.com ", "", "https://auth.example.com"}},
		invalid: []invalidCase{
			{label: "auth:9000/verify", code: diagnostics.BadForwardAuth, fallback: denies},
			{label: "ftp://auth/", code: diagnostics.BadForwardAuth, fallback: denies},
		}},
	{field: "forwardAuth.trustForwardHeader", get: func(d cfgDecoded) any { return accessOf(d).ForwardAuth.TrustForwardHeader },
		valid:   []validCase{{"true", "true", true}},
		invalid: []invalidCase{{label: "sure", code: diagnostics.BadForwardAuth}}},
	{field: "forwardAuth.authResponseHeaders", get: func(d cfgDecoded) any { return accessOf(d).ForwardAuth.AuthResponseHeaders },
		valid:   []validCase{{"x-auth-user, X-Groups", `["x-auth-user","X-Groups"]`, []string{"X-Auth-User", "X-Groups"}}},
		invalid: []invalidCase{{label: "X-Ok,bad header", json: `["X-Ok","bad header"]`, code: diagnostics.BadForwardAuth, fallback: "-", value: "bad header"}}},
	{field: "forwardAuth.authRequestHeaders", get: func(d cfgDecoded) any { return accessOf(d).ForwardAuth.AuthRequestHeaders },
		valid:   []validCase{{"cookie", "", []string{"Cookie"}}},
		invalid: []invalidCase{{label: "Cookie,a:b", code: diagnostics.BadForwardAuth, fallback: "-", value: "a:b"}}},
	{field: "forwardAuth.timeout", get: func(d cfgDecoded) any { return accessOf(d).ForwardAuth.Timeout },
		valid:   []validCase{{"2s", "", 2 * time.Second}, {"3", "3", 3 * time.Second}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadForwardAuth}, {label: "soon", code: diagnostics.BadForwardAuth}}},
	{field: "ipAllowList.sourceRange", get: func(d cfgDecoded) any { return accessOf(d).IPAllowList.SourceRange },
		valid: []validCase{{"10.0.0.0/8, 192.0.2.7", `["10.0.0.0/8","192.0.2.7"]`, []string{"10.0.0.0/8", "192.0.2.7"}}, {"2001:db8::/32", "", []string{"2001:db8::/32"}}},
		invalid: []invalidCase{
			{label: "10.0.0.0/33", code: diagnostics.BadIPAllowList, fallback: denies},
			{label: "10.0.0.0/8,example.com", json: `["10.0.0.0/8","example.com"]`, code: diagnostics.BadIPAllowList, fallback: denies, value: "example.com"},
		}},
	{field: "ipAllowList.depth", get: func(d cfgDecoded) any { return accessOf(d).IPAllowList.Depth },
		valid:   []validCase{{"1", "1", 1}, {"0", "0", 0}},
		invalid: []invalidCase{{label: "-1", json: "-1", code: diagnostics.BadIPAllowList}, {label: "x", code: diagnostics.BadIPAllowList}}},
	{field: "rateLimit.average", get: func(d cfgDecoded) any { return accessOf(d).RateLimit.Average },
		valid:   []validCase{{"100", "100", 100}},
		invalid: []invalidCase{{label: "-5", json: "-5", code: diagnostics.BadRateLimit}, {label: "0", json: "0", code: diagnostics.BadRateLimit}, {label: "1.5", json: "1.5", code: diagnostics.BadRateLimit}}},
	{field: "rateLimit.period", get: func(d cfgDecoded) any { return accessOf(d).RateLimit.Period },
		valid:   []validCase{{"1m", "", time.Minute}, {"10", "10", 10 * time.Second}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadRateLimit}, {label: "-1s", code: diagnostics.BadRateLimit}}},
	{field: "rateLimit.burst", get: func(d cfgDecoded) any { return accessOf(d).RateLimit.Burst },
		valid:   []validCase{{"50", "50", 50}},
		invalid: []invalidCase{{label: "0", json: "0", code: diagnostics.BadRateLimit}}},
	{field: "rateLimit.sourceCriterion", get: func(d cfgDecoded) any { return accessOf(d).RateLimit.SourceCriterion },
		valid:   []validCase{{"header:X-Api-Key", "", "header:X-Api-Key"}, {"HOST", "", "host"}, {"ip", "", "ip"}},
		invalid: []invalidCase{{label: "cookie", code: diagnostics.BadRateLimit}, {label: "header:", code: diagnostics.BadRateLimit}, {label: "header:a b", code: diagnostics.BadRateLimit}}},
	{field: "inFlight.amount", get: func(d cfgDecoded) any { return accessOf(d).InFlight.Amount },
		valid:   []validCase{{"10", "10", 10}},
		invalid: []invalidCase{{label: "zero", code: diagnostics.BadInFlight}, {label: "-3", json: "-3", code: diagnostics.BadInFlight}}},
	{field: "inFlight.sourceCriterion", get: func(d cfgDecoded) any { return accessOf(d).InFlight.SourceCriterion },
		valid:   []validCase{{"ip", "", "ip"}, {"header:X-Tenant", "", "header:X-Tenant"}},
		invalid: []invalidCase{{label: "user", code: diagnostics.BadInFlight}}},
}

// Giving a policy group in the API turns the policy on; its encoding
// decodes back to the same policies.
func TestAccessPoliciesRoundTrip(t *testing.T) {
	body := `{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],"config":{"hostnames":["a.example.com"],
	"basic_auth":{"users":["` + strings.ReplaceAll(testBcrypt, `$`, `$`) + `"],"realm":"r","remove_header":true},
	"forward_auth":{"address":"http://auth:9000/v","auth_response_headers":["X-User"],"timeout":"2s"},
	"ip_allow_list":{"source_range":["10.0.0.0/8","bad"],"depth":1},
	"rate_limit":{"average":5,"period":"1m","burst":10,"source_criterion":"host"},
	"in_flight":{"amount":3}}}`
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfgWithCode(ds, diagnostics.BadIPAllowList); len(got) != 1 || len(ds) != 1 {
		t.Fatalf("diagnostics %v, want one W052", ds)
	}
	a := ep.Access
	if a.BasicAuth == nil || a.ForwardAuth == nil || a.IPAllowList == nil || a.RateLimit == nil || a.InFlight == nil {
		t.Fatalf("policies not all on: %+v", a)
	}
	if *a.RateLimit != (RateLimit{Average: 5, Period: time.Minute, Burst: 10, SourceCriterion: CriterionHost}) {
		t.Errorf("rate limit %+v", *a.RateLimit)
	}
	if *a.InFlight != (InFlight{Amount: 3, SourceCriterion: CriterionIP}) {
		t.Errorf("in-flight %+v", *a.InFlight)
	}
	// The bad range is kept, so that the router keeps denying after the
	// entrypoint is persisted and read back.
	out, err := EncodeEntrypoint(ep)
	if err != nil {
		t.Fatal(err)
	}
	back, ds2, err := DecodeEntrypoint(FormatJSON, out, diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if !back.Access.Equal(ep.Access) {
		t.Fatalf("round trip changed the policies:\n%+v\n%+v\n%s", back.Access, ep.Access, out)
	}
	if len(cfgWithCode(ds2, diagnostics.BadIPAllowList)) != 1 {
		t.Fatalf("bad range not reported again: %v", ds2)
	}
}

// A misspelled access policy, or another proxy's name of one, is an error
// that makes the route deny (E006), with a hint naming Levee's field.
func TestAccessPolicyNameHints(t *testing.T) {
	for name, want := range map[string]string{
		"basicAuh.users":          "did you mean levee.http.app.basicAuth.users?",
		"rateLimt.average":        "did you mean levee.http.app.rateLimit.average?",
		"ipalowlist.sourcerange":  "did you mean levee.http.app.ipAllowList.sourceRange?",
		"inflightreq.amount":      "levee.http.app.inFlight.amount",
		"ipwhitelist.sourcerange": "levee.http.app.ipAllowList.sourceRange",
	} {
		ep, ds := DecodeLabels(map[string]string{"host": "a.com", name: "x"}, cfgSrc, cfgLabelKey)
		e := cfgWithCode(ds, diagnostics.MisspelledAccessPolicy)
		if len(e) != 1 || !strings.Contains(e[0].Hint, want) || e[0].Severity != diagnostics.Error {
			t.Errorf("%s: %v, want an error with a hint %q", name, ds, want)
		}
		if len(cfgWithCode(ds, diagnostics.UnknownKey)) != 0 {
			t.Errorf("%s: also W013: %v", name, ds)
		}
		if got := ep.Entrypoint.Access.Unread; !slices.Equal(got, []string{cfgLabelKey(name)}) {
			t.Errorf("%s: unread %q, want the key as written", name, got)
		}
	}
}

// apr1 and {SHA} lines, as htpasswd -nb and -nbs write them, are
// accepted with W055 saying they are weak and how to make a bcrypt hash;
// users of different costs get W056.
func TestWeakAndMixedBasicAuthHashes(t *testing.T) {
	apr1 := "ann:$apr1$H6uskkkW$5ZFNT.MKp/uF5QZ.U5Pld0"
	sha := "sam:{SHA}/vNB+F2HQ559kaLUZbmHHvZrXpg="
	cost12 := "bob:$2y$12$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC"
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(`{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],"config":{"hostnames":["a.example.com"],`+
		`"basic_auth":{"users":["`+apr1+`","`+sha+`","`+testBcrypt+`","`+cost12+`"]}}}`), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ep.Access.BasicAuth.Users; len(got) != 4 {
		t.Fatalf("users %v", got)
	}
	var weak []string
	var mixed []diagnostics.Diagnostic
	for _, d := range ds {
		switch d.Code {
		case diagnostics.WeakBasicHash:
			weak = append(weak, d.Value)
			if !strings.Contains(d.Hint, "htpasswd -nbB") {
				t.Errorf("W055 without the bcrypt recipe: %v", d)
			}
		case diagnostics.MixedHashCosts:
			mixed = append(mixed, d)
		default:
			t.Errorf("unexpected %v", d)
		}
	}
	if !slices.Equal(weak, []string{"ann:$apr…", "sam:{SHA…"}) {
		t.Errorf("W055 for %v, want ann and sam", weak)
	}
	if len(mixed) != 1 || !strings.Contains(mixed[0].Message, "admin bcrypt cost 5") || !strings.Contains(mixed[0].Message, "bob bcrypt cost 12") ||
		!strings.Contains(mixed[0].Message, "ann apr1") {
		t.Errorf("W056 %v", mixed)
	}
}

func TestCheckHtpasswdLine(t *testing.T) {
	if _, _, err := CheckHtpasswdLine(testBcrypt); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", ":x", "admin:$$2y$$05$$c4WoMPo3SXsafkva.HHa6uXQZWr7oboPiC2bT/r7q1BB8I2s0BRqC", "admin", "admin:" + strings.Repeat("x", 60), "admin:$2y$05$" + strings.Repeat("!", 53), "admin:$2y$99$" + strings.Repeat("a", 53), "admin:$2y$15$" + strings.Repeat("a", 53), "admin:{SHA}abc", "admin:{SSHA}/vNB+F2HQ559kaLUZbmHHvZrXpg="} {
		if _, _, err := CheckHtpasswdLine(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// The API gets the same error and did-you-mean for a misspelled policy
// group.
func TestAccessPolicyNameHintsJSON(t *testing.T) {
	body := `{"name":"app","backends":[{"address":"10.0.0.5","port":8080}],"config":{"hostnames":["a.example.com"],"rate_limt":{"average":5}}}`
	ep, ds, err := DecodeEntrypoint(FormatJSON, []byte(body), diagnostics.Source{})
	if err != nil {
		t.Fatal(err)
	}
	e := cfgWithCode(ds, diagnostics.MisspelledAccessPolicy)
	if len(e) != 1 || e[0].Key != "config.rate_limt" || !strings.Contains(e[0].Hint, "config.rate_limit") {
		t.Fatalf("%v", ds)
	}
	if !slices.Equal(ep.Access.Unread, []string{"config.rate_limt"}) {
		t.Fatalf("unread %q", ep.Access.Unread)
	}
}
