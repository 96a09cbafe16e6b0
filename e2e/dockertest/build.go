package dockertest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// buildTimeout bounds one `go build` or image build on a loaded machine.
const buildTimeout = 5 * time.Minute

// binaries caches compiled packages per test process, keyed by package path.
var binaries sync.Map // string -> *binary

type binary struct {
	once sync.Once
	data []byte
	err  error
}

// Binary compiles the Go package pkg ("./cmd/echo", relative to the module
// root, or a full import path) into a static linux binary and returns its
// bytes. Each package is compiled once per test process.
func Binary(t testing.TB, pkg string) []byte {
	t.Helper()
	v, _ := binaries.LoadOrStore(pkg, &binary{})
	b := v.(*binary)
	b.once.Do(func() { b.data, b.err = compile(pkg) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.data
}

func compile(pkg string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	goTool := goBinary()
	root, err := moduleRoot(ctx, goTool)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "levee-dockertest-")
	if err != nil {
		return nil, fmt.Errorf("compile %s: temp dir: %w", pkg, err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "bin")
	cmd := exec.CommandContext(ctx, goTool, "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("compile %s in %s: %w\n%s", pkg, root, err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("compile %s: read binary: %w", pkg, err)
	}
	return data, nil
}

// goBinary finds the go command: PATH first, then $GOROOT/bin.
func goBinary() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	if root := os.Getenv("GOROOT"); root != "" {
		return filepath.Join(root, "bin", "go")
	}
	return "go"
}

func moduleRoot(ctx context.Context, goTool string) (string, error) {
	out, err := exec.CommandContext(ctx, goTool, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	return filepath.Dir(mod), nil
}

// BuildImage builds a FROM scratch image holding the compiled package pkg as
// /<base name of pkg> (e.g. /echo), which is also the ENTRYPOINT.
// dockerfileExtra is appended to the Dockerfile (EXPOSE, HEALTHCHECK, ENV, …).
// The image is labelled levee.test=<RunID(t)> and removed when t ends. It
// returns the image tag.
func BuildImage(t testing.TB, cli *client.Client, pkg, dockerfileExtra string) string {
	t.Helper()
	name := path.Base(filepath.ToSlash(pkg))
	return BuildImageTagged(t, cli, pkg, dockerfileExtra, fmt.Sprintf("levee-test/%s:%s", strings.ToLower(name), RunID(t)))
}

// BuildImageTagged is BuildImage with the image's tag chosen by the caller
// (a test that names what it creates after its issue, say); the tag should
// contain RunID(t) to stay unique across concurrent runs.
func BuildImageTagged(t testing.TB, cli *client.Client, pkg, dockerfileExtra, tag string) string {
	t.Helper()
	Cleanup(t, cli)
	bin := Binary(t, pkg)
	name := path.Base(filepath.ToSlash(pkg))
	dockerfile := fmt.Sprintf("FROM scratch\nCOPY %s /%s\nENTRYPOINT [\"/%s\"]\n%s\n", name, name, name, dockerfileExtra)
	files := map[string][]byte{"Dockerfile": []byte(dockerfile), name: bin}
	// Concurrent tests build identical layers, and the legacy builder shares
	// cached intermediate images between them; another test's cleanup can
	// remove one while this build reuses it ("No such image"). Such a build
	// succeeds when tried again.
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		if err = buildOnce(cli, files, tag, RunID(t)); err == nil {
			return tag
		}
		t.Logf("build image %s (attempt %d of 3): %v", tag, attempt, err)
	}
	t.Fatalf("build image %s from Dockerfile:\n%s\n%v", tag, dockerfile, err)
	return ""
}

// buildOnce sends one build of the in-memory context files to the engine.
func buildOnce(cli *client.Client, files map[string][]byte, tag, runID string) error {
	tarball, err := tarContext(files)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	resp, err := cli.ImageBuild(ctx, tarball, client.ImageBuildOptions{
		Tags:        []string{tag},
		Labels:      map[string]string{Label: runID},
		Remove:      true,
		ForceRemove: true,
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return buildResult(resp.Body)
}

// tarContext returns an in-memory build context; binaries are executable.
func tarContext(files map[string][]byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for name, data := range files {
		hdr := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar header %s: %w", name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("tar write %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar close: %w", err)
	}
	return &buf, nil
}

// buildResult reads the build's JSON message stream; a build failure is
// reported inside the stream, not as an HTTP error.
func buildResult(r io.Reader) error {
	var log strings.Builder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var m struct {
			Stream string `json:"stream"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue
		}
		log.WriteString(m.Stream)
		if m.Error != "" {
			return fmt.Errorf("%s\nbuild output:\n%s", m.Error, log.String())
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read build output: %w", err)
	}
	return nil
}
