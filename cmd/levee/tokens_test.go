package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/e2e/logbuf"
)

func TestCheckToken(t *testing.T) {
	cases := []struct {
		token, want string // want: "" accepted, else part of the error
	}{
		{"", ""},
		{"q8Vd2Yc4mX0pL7sT1nB5rZ9wK3hJ6fGa", ""},
		{"correct-horse-battery-staple", ""},
		{"0123456789abcdef", ""},
		{"change-me", `is the placeholder "change-me"`},
		{"CHANGEME", `is the placeholder "changeme"`},
		{"Change_Me", `is the placeholder "change_me"`},
		{"secret", "is the placeholder"},
		{"Password", "is the placeholder"},
		{"token", "is the placeholder"},
		{"admin", "is the placeholder"},
		{"test", "is the placeholder"},
		{"k3Xq9", "is 5 characters long, want at least 16"},
		{"fifteen-chars!!", "is 15 characters long"},
		{"please-change-me-now", `contains the placeholder "changeme"`},
		{"<your-token-goes-here>", `contains the placeholder "yourtoken"`},
		{"aaaaaaaaaaaaaaaaaaaa", "is one character repeated"},
	}
	for _, c := range cases {
		err := checkToken(c.token)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("checkToken(%q) = %v, want it accepted", c.token, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("checkToken(%q) = %v, want an error containing %q", c.token, err, c.want)
		}
	}
}

// serveArgs are serve flags that, should a token check let a weak token
// through, make the test fail at once instead of serving: no Docker,
// ephemeral loopback ports, a private state file; the caller's context is
// already cancelled, so serve returns 0 right after starting.
func serveArgs(t *testing.T, extra ...string) []string {
	return append([]string{"serve", "--docker=false", "--http-listen", "127.0.0.1:0", "--api-listen", "127.0.0.1:0",
		"--state-file", filepath.Join(t.TempDir(), "state.json"), "--log-format", "json"}, extra...)
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// A weak admin or read token, from a flag or the environment, stops
// start-up with exit 2 and a message naming the flag and the variable but
// not the token.
func TestServeRefusesWeakTokens(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{args: []string{"--api-token", "change-me"},
			want: []string{`--api-token (LEVEE_API_TOKEN) is the placeholder "change-me"`, "head -c 24 /dev/urandom"}},
		{env: map[string]string{"LEVEE_API_TOKEN": "Secret"},
			want: []string{`--api-token (LEVEE_API_TOKEN) is the placeholder "secret"`}},
		{env: map[string]string{"LEVEE_API_READ_TOKEN": "hunter2"},
			want: []string{"--api-read-token (LEVEE_API_READ_TOKEN) is 7 characters long, want at least 16"}},
		{env: map[string]string{"LEVEE_STICKY_SECRET": "hunter2"},
			want: []string{"--sticky-secret (LEVEE_STICKY_SECRET) is 7 characters long, want at least 16"}},
		{args: []string{"--api-token", "short1", "--api-read-token", "short2"},
			want: []string{"--api-token (LEVEE_API_TOKEN) is 6", "--api-read-token (LEVEE_API_READ_TOKEN) is 6"}},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		code := run(cancelled(), serveArgs(t, c.args...), &out, &errOut, envOf(c.env))
		if code != 2 {
			t.Errorf("args %v env %v: exit %d, want 2 (stderr %q)", c.args, c.env, code, errOut.String())
		}
		for _, want := range c.want {
			if !strings.Contains(errOut.String(), want) {
				t.Errorf("args %v env %v: stderr %q, want it to contain %q", c.args, c.env, errOut.String(), want)
			}
		}
		for _, secret := range []string{"hunter2", "short1", "short2"} {
			if strings.Contains(errOut.String(), secret) {
				t.Errorf("args %v env %v: stderr %q shows the token", c.args, c.env, errOut.String())
			}
		}
		if out.Len() != 0 {
			t.Errorf("args %v env %v: Levee logged %q before refusing", c.args, c.env, out.String())
		}
	}
}

// Strong tokens start Levee: the check does not refuse everything.
func TestServeAcceptsStrongTokens(t *testing.T) {
	var out lockedBuffer // the listeners' goroutines log too
	var errOut bytes.Buffer
	args := serveArgs(t, "--api-token", "q8Vd2Yc4mX0pL7sT1nB5rZ9wK3hJ6fGa", "--api-read-token", "correct-horse-battery-staple")
	if code := run(cancelled(), args, &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("exit %d, want 0; stderr %q, log %q", code, errOut.String(), out.String())
	}
	if !strings.Contains(out.String(), "levee starting") {
		t.Errorf("log %q, want it to show Levee started", out.String())
	}
}

// lockedBuffer is a bytes.Buffer that several goroutines may write.
type lockedBuffer = logbuf.Buffer
