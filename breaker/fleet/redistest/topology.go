package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// StartCluster starts a Redis Cluster of n masters (no replicas) and
// returns its store URL (redis://first?addr=second&addr=…). It needs
// redis-cli (Debian's redis-tools, a dependency of redis-server).
func StartCluster(t testing.TB, n int) string {
	t.Helper()
	bin := lookPath(t, "redis-server")
	cli := lookPath(t, "redis-cli")
	var addrs []string
	for range n {
		s := start(t, bin, "", []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000"})
		addrs = append(addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v: %s", err, out)
	}
	for _, a := range addrs {
		waitFor(t, cli, a, []string{"cluster", "info"}, "cluster_state:ok")
	}
	u := "redis://" + addrs[0] + "?"
	for i, a := range addrs[1:] {
		if i > 0 {
			u += "&"
		}
		u += "addr=" + a
	}
	return u
}

// StartSentinel starts one Sentinel monitoring master as "mymaster" and
// returns the store URL (redis://sentinel/0?master_name=mymaster).
func StartSentinel(t testing.TB, master *Server) string {
	t.Helper()
	bin := lookPath(t, "redis-server")
	cli := lookPath(t, "redis-cli")
	host, port, _ := net.SplitHostPort(master.Addr)
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	body := fmt.Sprintf("sentinel monitor mymaster %s %s 1\nsentinel down-after-milliseconds mymaster 5000\n", host, port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s := start(t, bin, conf, []string{"--sentinel"})
	waitFor(t, cli, s.Addr, []string{"sentinel", "get-master-addr-by-name", "mymaster"}, port)
	return "redis://" + s.Addr + "/0?master_name=mymaster"
}

// waitFor polls a redis-cli command on addr until its output contains want.
func waitFor(t testing.TB, cli, addr string, cmd []string, want string) {
	t.Helper()
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out []byte
	for ctx.Err() == nil {
		args := append([]string{"-h", host, "-p", port}, cmd...)
		out, _ = exec.CommandContext(ctx, cli, args...).CombinedOutput()
		if strings.Contains(string(out), want) {
			return
		}
		time.Sleep(50 * time.Millisecond) // poll
	}
	t.Fatalf("redis-cli %s on %s: no %q after 20s: %s", strings.Join(cmd, " "), addr, want, out)
}
