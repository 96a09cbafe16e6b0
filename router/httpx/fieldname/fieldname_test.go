package fieldname

import (
	"net/http"
	"slices"
	"testing"
)

func TestEqual(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"X-Auth-User", "X-Auth-User", true},
		{"X_Auth_User", "X-Auth-User", true},
		{"x_auth_user", "X-AUTH-USER", true},
		{"X-Auth_user", "X-Auth-User", true},
		{"X-Auth-Users", "X-Auth-User", false},
		{"X.Auth.User", "X-Auth-User", false},
		{"", "", true},
	} {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if !HasPrefix("X_forwarded_port", "X-Forwarded-") || HasPrefix("X-Forward", "X-Forwarded-") {
		t.Error("HasPrefix does not fold, or reads past the name")
	}
}

func TestDeleteUnderscoreSpellings(t *testing.T) {
	h := http.Header{"X-Auth-User": {"a"}, "X_auth_user": {"b"}, "X-Auth_user": {"c"}, "X_other": {"d"}}
	if !HasUnderscore(h) || HasUnderscore(http.Header{"X-Auth-User": nil}) {
		t.Error("HasUnderscore is wrong")
	}
	DeleteUnderscoreSpellings(h, []string{"X-Groups", "X-Auth-User"})
	var got []string
	for k := range h {
		got = append(got, k)
	}
	slices.Sort(got)
	if want := []string{"X-Auth-User", "X_other"}; !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
}

func TestNoAllocation(t *testing.T) {
	h := http.Header{"Accept": nil, "User-Agent": nil, "X-Forwarded-For": nil}
	if n := testing.AllocsPerRun(100, func() {
		_ = HasUnderscore(h)
		DeleteUnderscoreSpellings(h, []string{"X-Auth-User"})
	}); n != 0 {
		t.Errorf("%v allocations, want none", n)
	}
}
