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
		{"X.Auth~User", "X-Auth-User", true},
		{"X+Auth!User", "X-Auth-User", true},
		{"X-Auth-Users", "X-Auth-User", false},
		{"X-Auth-Use1", "X-Auth-User", false},
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

func TestPlain(t *testing.T) {
	for name, want := range map[string]bool{"X-Auth-User": true, "Md5-Digest2": true, "X_Auth": false, "X.Auth": false,
		"X~Auth": false, "X!": false, "X'a": false, "a`b": false, "a|b": false, "a^b": false, "a#b": false} {
		if got := Plain(name); got != want {
			t.Errorf("Plain(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDeleteAliases(t *testing.T) {
	h := http.Header{"X-Auth-User": {"a"}, "X_auth_user": {"b"}, "X-Auth_user": {"c"}, "X.Auth.User": {"d"}, "X_other": {"e"}}
	DeleteAliases(h, []string{"X-Groups", "X-Auth-User"})
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
		for k := range h {
			_ = Plain(k)
		}
		DeleteAliases(h, []string{"X-Auth-User"})
	}); n != 0 {
		t.Errorf("%v allocations, want none", n)
	}
}
