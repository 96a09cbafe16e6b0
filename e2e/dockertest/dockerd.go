package dockertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// A second Docker engine on this machine, for tests of a Levee watching
// several hosts: dockerd with its own data root (vfs storage: no overlay
// on overlay), exec root, pidfile, unix socket, a TCP listener on a free
// loopback port, its own bridge (created here, without iptables: published
// ports go through the userland proxy) and its own containerd namespace.
// It needs root.
//
// It is stopped and its directory and bridge removed when the test ends.
// A killed test runs no cleanup: dockerd then gets SIGTERM from the kernel
// as its parent dies (Pdeathsig), stopping its containers, and the next
// test process's sweep removes the directory (named after the run ID) and
// the bridge of any run whose process is gone.

// enginePrefix begins the directory of every second engine.
const enginePrefix = "levee-dockerd-"

// engineTimeout bounds an engine's start and its stop.
const engineTimeout = 90 * time.Second

// Engine is a second Docker engine started by SecondEngine.
type Engine struct {
	// Client talks to it on its socket.
	Client *client.Client
	// Socket and TCP are its addresses (unix://…, tcp://127.0.0.1:port).
	Socket, TCP string

	dir, bridge string
	args        []string
	exited      chan error
}

// EngineOptions change a second engine.
type EngineOptions struct {
	// TLSDir, when set, holds the engine's server certificates (ca.pem,
	// cert.pem, key.pem, see EngineCerts): its TCP listener then requires
	// a client certificate that CA signed (--tlsverify).
	TLSDir string
}

// SecondEngine starts a second engine for t and returns once it answers.
// Without root it skips t (fails it with CI=true).
func SecondEngine(t testing.TB) *Engine {
	t.Helper()
	return SecondEngineWith(t, EngineOptions{})
}

// SecondEngineWith is SecondEngine with options.
func SecondEngineWith(t testing.TB, o EngineOptions) *Engine {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test starts a Docker Engine")
	}
	if os.Geteuid() != 0 {
		unavailable(t, "dockerd", errors.New("starting a second engine needs root"))
	}
	if _, err := exec.LookPath("dockerd"); err != nil {
		unavailable(t, "dockerd", err)
	}
	sweepEngines(t.Logf)
	runID := RunID(t)
	dir, err := os.MkdirTemp("", enginePrefix+runID+"-")
	if err != nil {
		t.Fatal(err)
	}
	e := &Engine{dir: dir, Socket: "unix://" + filepath.Join(dir, "docker.sock")}
	e.bridge = fmt.Sprintf("lvd%dn%s", os.Getpid()%1000000, runID[strings.LastIndex(runID, "-")+1:]) // at most 15 bytes
	t.Cleanup(func() { e.remove(t) })
	subnet, err := freeSubnet()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bridge"), []byte(e.bridge), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"link", "add", e.bridge, "type", "bridge"}, {"addr", "add", subnet, "dev", e.bridge}, {"link", "set", e.bridge, "up"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	e.TCP = "tcp://127.0.0.1:" + strconv.Itoa(port)
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := "levee-" + runID
	e.args = []string{"--config-file", filepath.Join(dir, "daemon.json"),
		"--data-root", filepath.Join(dir, "data"), "--exec-root", filepath.Join(dir, "exec"), "--pidfile", filepath.Join(dir, "docker.pid"),
		"-H", e.Socket, "-H", e.TCP, "--bridge", e.bridge, "--iptables=false", "--ip-masq=false", "--storage-driver", "vfs",
		"--containerd-namespace", ns, "--containerd-plugins-namespace", ns + "-plugins"}
	if o.TLSDir != "" {
		e.args = append(e.args, "--tlsverify", "--tlscacert", filepath.Join(o.TLSDir, "ca.pem"),
			"--tlscert", filepath.Join(o.TLSDir, "cert.pem"), "--tlskey", filepath.Join(o.TLSDir, "key.pem"))
	}
	if e.Client, err = client.New(client.WithHost(e.Socket)); err != nil {
		t.Fatal(err)
	}
	e.Start(t)
	Cleanup(t, e.Client) // runs before remove: containers go first
	return e
}

// Start starts the engine (again) and waits until it answers.
func (e *Engine) Start(t testing.TB) {
	t.Helper()
	log, err := os.OpenFile(filepath.Join(e.dir, "dockerd.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("dockerd", e.args...)
	cmd.Stdout, cmd.Stderr = log, log
	// The kernel sends SIGTERM to dockerd when the thread that started it
	// ends: that thread stays locked, waiting, for dockerd's life.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		t.Fatalf("start dockerd: %v", err)
	}
	e.exited = exited
	if err := Poll(engineTimeout, func() error {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("dockerd exited: %v", err)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := e.Client.Ping(ctx, client.PingOptions{})
		return err
	}); err != nil {
		logs, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
		t.Fatalf("second engine did not answer: %v\n%s", err, tail(string(logs), 20))
	}
}

// Stop stops the engine (SIGTERM: it stops its containers first) and waits
// for it to exit.
func (e *Engine) Stop(t testing.TB) {
	t.Helper()
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
}

func (e *Engine) stop() error {
	if e.exited == nil {
		return nil
	}
	pid, err := readPid(filepath.Join(e.dir, "docker.pid"))
	if err == nil {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	select {
	case <-e.exited:
		e.exited = nil
		return nil
	case <-time.After(engineTimeout):
		return fmt.Errorf("dockerd (pid %d) did not exit within %v", pid, engineTimeout)
	}
}

// remove stops the engine and removes its bridge and directory.
func (e *Engine) remove(t testing.TB) {
	if err := e.stop(); err != nil {
		t.Error(err)
	}
	if e.Client != nil {
		_ = e.Client.Close()
	}
	if t.Failed() {
		logs, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
		t.Logf("second engine's log (end):\n%s", tail(string(logs), 30))
	}
	removeEngineFiles(e.dir, e.bridge)
}

func removeEngineFiles(dir, bridge string) {
	if bridge != "" {
		_ = exec.Command("ip", "link", "del", bridge).Run()
	}
	_ = os.RemoveAll(dir)
}

// sweepEngines removes the second engines of test processes that are gone.
func sweepEngines(logf func(string, ...any)) {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), enginePrefix+"*"))
	for _, dir := range dirs {
		rest := strings.TrimPrefix(filepath.Base(dir), enginePrefix)
		parts := strings.SplitN(rest, "-", 3)
		if len(parts) < 2 || !leftover(parts[0]+"-"+parts[1], processAlive) {
			continue
		}
		if pid, err := readPid(filepath.Join(dir, "docker.pid")); err == nil && processAlive(pid) {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			_ = Poll(engineTimeout, func() error {
				if processAlive(pid) {
					return errors.New("still running")
				}
				return nil
			})
		}
		bridge, _ := os.ReadFile(filepath.Join(dir, "bridge"))
		removeEngineFiles(dir, strings.TrimSpace(string(bridge)))
		logf("dockertest: removed the second engine %s of a killed test run", dir)
	}
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// freeSubnet is a 10.213.N.1/24 no interface of this machine is on.
func freeSubnet() (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	for n := os.Getpid()%200 + 1; n < 255; n++ {
		_, want, _ := net.ParseCIDR(fmt.Sprintf("10.213.%d.0/24", n))
		used := false
		for _, a := range addrs {
			if ip, _, err := net.ParseCIDR(a.String()); err == nil && want.Contains(ip) {
				used = true
			}
		}
		if !used {
			return fmt.Sprintf("10.213.%d.1/24", n), nil
		}
	}
	return "", errors.New("no free 10.213.N.0/24 subnet for the second engine's bridge")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
