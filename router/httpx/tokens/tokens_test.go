package tokens

import (
	"net/http"
	"slices"
	"testing"
)

func TestNext(t *testing.T) {
	for _, c := range []struct {
		list string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{" a ,\tb\t, c", []string{"a", "b", "c"}},
		{"a,,b,", []string{"a", "", "b"}},
		{"websocket/13, h2c", []string{"websocket/13", "h2c"}},
		{" , ", []string{"", ""}},
	} {
		var got []string
		for v := c.list; v != ""; {
			var e string
			e, v = Next(v)
			got = append(got, e)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Next over %q: %q, want %q", c.list, got, c.want)
		}
	}
}

func TestAppendConnectionNamed(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   []string
	}{
		{nil, nil},
		{[]string{"close"}, nil},
		{[]string{"Keep-Alive, UPGRADE,close"}, nil},
		{[]string{"x-foo"}, []string{"X-Foo"}},
		{[]string{"close, x-foo", " X-Bar ,,upgrade"}, []string{"X-Foo", "X-Bar"}},
		{[]string{"keep-alive-x, closed"}, []string{"Keep-Alive-X", "Closed"}},
	} {
		got := AppendConnectionNamed(nil, c.values...)
		if !slices.Equal(got, c.want) {
			t.Errorf("AppendConnectionNamed(%q) = %q, want %q", c.values, got, c.want)
		}
	}
	got := AppendConnectionNamed([]string{"A"}, "b")
	if !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("appending to a non-empty slice: %q", got)
	}
}

// Reading Connection does not allocate when nothing in it needs a
// canonical form made.
func TestAppendConnectionNamedAllocs(t *testing.T) {
	h := http.Header{"Connection": {"keep-alive, Upgrade, X-Trace"}}
	var buf [4]string
	if n := testing.AllocsPerRun(100, func() {
		_ = AppendConnectionNamed(buf[:0], h["Connection"]...)
	}); n != 0 {
		t.Errorf("%v allocations per call, want 0", n)
	}
}
