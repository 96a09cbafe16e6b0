package config

import "testing"

// Every spelling routing takes for a host has that host's one form.
func TestAppendRequestHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"h.test", "h.test"},
		{"h.test:1", "h.test"},
		{"h.test:65535", "h.test"},
		{"h.test.", "h.test"},
		{"H.TEST.:80", "h.test"},
		{"[h.test]", "h.test"},
		{"[::1]:8080", "::1"},
		{"[::1]", "::1"},
		{"192.0.2.1:80", "192.0.2.1"},
		{".", "."},
		{"", ""},
	} {
		if got := string(AppendRequestHost(nil, c.in)); got != c.want {
			t.Errorf("AppendRequestHost(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	var buf [64]byte
	if n := testing.AllocsPerRun(100, func() { _ = AppendRequestHost(buf[:0], "App.Example.COM.:443") }); n != 0 {
		t.Errorf("%v allocations with room in dst, want 0", n)
	}
}
