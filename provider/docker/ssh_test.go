package docker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// An ssh:// engine is dialled through the local ssh binary, which runs
// `docker system dial-stdio` on the remote host and carries the Engine
// API over its standard input and output. A stand-in ssh on PATH records
// its arguments and answers one ping: the client built for
// ssh://admin@edge2:2222 runs it with the user, port and remote command,
// and speaks HTTP over its pipes.
func TestSSHHostDialsThroughTheSSHBinary(t *testing.T) {
	dir := t.TempDir()
	argsFile := filepath.Join(dir, "args")
	script := "#!/bin/sh\n" +
		"printf '%s\\n' \"$@\" > " + argsFile + "\n" +
		// Answer once the request's header is read, as an engine does.
		"while IFS= read -r line; do [ \"$line\" = \"$(printf '\\r')\" ] && break; done\n" +
		"printf 'HTTP/1.1 200 OK\\r\\nApi-Version: 1.47\\r\\nContent-Type: text/plain\\r\\nContent-Length: 0\\r\\n\\r\\n'\n" +
		"exec cat >/dev/null\n"
	if err := os.WriteFile(filepath.Join(dir, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("DOCKER_HOST", "")

	spec, err := ParseHostSpec("edge2=ssh://admin@edge2:2222")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := newClient(spec.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ping, err := cli.Ping(ctx, client.PingOptions{})
	if err != nil {
		t.Fatalf("ping over the stand-in ssh: %v", err)
	}
	if ping.APIVersion != "1.47" {
		t.Errorf("ping API version %q, want the stand-in's 1.47", ping.APIVersion)
	}
	raw, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatalf("the stand-in ssh did not run: %v", err)
	}
	args := strings.Fields(string(raw))
	joined := strings.Join(args, " ")
	for _, want := range []string{"-l admin", "-p 2222", "-T", "-- edge2 docker system dial-stdio"} {
		if !strings.Contains(joined, want) {
			t.Errorf("ssh ran with %q, want %q in it", joined, want)
		}
	}
	if got := hostAddress(spec.URL); got != "edge2" {
		t.Errorf("published ports of an ssh host are dialled at %q, want edge2", got)
	}
}
