package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/levee-proxy/levee/breaker"
)

// TestParseEvent: announcements decode, and anything malformed is an
// error, never a panic or a half-applied event.
func TestParseEvent(t *testing.T) {
	good := []struct {
		in   string
		want event
	}{
		{"S\napp\nopen\n12\n1500\n0\n1\nerror_ratio", event{kind: "S", name: "app",
			remote: breaker.Remote{Epoch: 12, State: breaker.Open, Rule: breaker.RuleErrorRatio, OpenFor: 1500 * time.Millisecond, Trips: 1}}},
		{"C\napp@10.0.0.1:80\nopen\n13\n0\n1\n1\nopen\n4\nalice", event{kind: "C", name: "app@10.0.0.1:80", action: "open", by: "alice", ctl: 4,
			remote: breaker.Remote{Epoch: 13, State: breaker.Open, Rule: breaker.RuleManual, Forced: true, Trips: 1}}},
		{"C\napp\nclosed\n14\n0\n0\n0\nclose\n5\n", event{kind: "C", name: "app", action: "close", ctl: 5,
			remote: breaker.Remote{Epoch: 14, State: breaker.Closed, Rule: breaker.RuleManual}}},
	}
	for _, g := range good {
		got, err := parseEvent(g.in)
		if err != nil || got != g.want {
			t.Errorf("parseEvent(%q) = %+v, %v; want %+v", g.in, got, err, g.want)
		}
	}
	for _, bad := range []string{
		"", "S", "X\napp\nopen\n1\n0\n0\n0\n", "S\napp\najar\n1\n0\n0\n0\n",
		"S\napp\nopen\nx\n0\n0\n0\n", "S\napp\nopen\n1\n-\n0\n0\n", "S\napp\nopen\n1\n0\n0\nz\n",
		"C\napp\nopen\n1\n0\n1\n0\nopen", "C\napp\nopen\n1\n0\n1\n0\nopen\nn\nby",
	} {
		if _, err := parseEvent(bad); err == nil {
			t.Errorf("parseEvent(%q) accepted", bad)
		}
	}
}

// TestParseReply: a reply of the wrong shape is errMalformed (garbage),
// a transport error is not.
func TestParseReply(t *testing.T) {
	ok := []any{"open", int64(7), int64(900), int64(0), int64(2), int64(1), int64(0), int64(1), int64(40), int64(30), int64(0), int64(0), "error_ratio", "123"}
	cmd := redis.NewCmd(context.Background())
	cmd.SetVal(ok)
	r, err := parseReply(cmd)
	want := reply{remote: breaker.Remote{Epoch: 7, State: breaker.Open, Rule: breaker.RuleErrorRatio, OpenFor: 900 * time.Millisecond, Trips: 2, GrantProbes: 1},
		gen: 7, mismatch: true, winTotal: 40, winFailures: 30}
	if err != nil || r != want {
		t.Fatalf("parseReply = %+v, %v; want %+v", r, err, want)
	}
	bad := [][]any{
		nil, ok[:13],
		append([]any{"ajar"}, ok[1:]...),
		append([]any{int64(1)}, ok[1:]...),
		append([]any{"open", "7"}, ok[2:]...),
		append([]any{"open", int64(0)}, ok[2:]...),
		append(append([]any{}, ok[:12]...), int64(3), "1"),
	}
	for i, v := range bad {
		cmd := redis.NewCmd(context.Background())
		cmd.SetVal(v)
		if _, err := parseReply(cmd); !errors.Is(err, errMalformed) || !isGarbage(err) {
			t.Errorf("bad reply %d (%v): error %v, want malformed", i, v, err)
		}
	}
	cmd = redis.NewCmd(context.Background())
	cmd.SetErr(context.DeadlineExceeded)
	if _, err := parseReply(cmd); err == nil || isGarbage(err) {
		t.Errorf("a timeout is %v; want an error that is not garbage (W075, not W076)", err)
	}
	cmd = redis.NewCmd(context.Background())
	cmd.SetVal("OK")
	if _, err := parseReply(cmd); err == nil || !isGarbage(err) {
		t.Errorf("a string reply is %v; want garbage", err)
	}
}
