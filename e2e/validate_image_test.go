package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/e2e/dockertest"
)

// `levee validate` on a compose file, with the engine reachable, takes a
// service's port from its image's EXPOSE as serve does, not port 80.
func TestValidateComposeReadsTheImagesExposedPort(t *testing.T) {
	cli := dockertest.Require(t)
	image := dockertest.EchoImage(t, cli) // EXPOSE 8080
	compose := "services:\n  app:\n    image: " + image + "\n    labels:\n      levee.enable: \"true\"\n      levee.http.app.host: app.example.com\n"
	path := filepath.Join(t.TempDir(), "compose.yml")
	if err := os.WriteFile(path, []byte(compose), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(leveeBinary, "validate", path).CombinedOutput()
	if err != nil {
		t.Fatalf("levee validate: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "app.example.com -> app:8080") || !strings.Contains(string(out), "the container's only exposed port") {
		t.Fatalf("levee validate did not take the image's EXPOSE 8080:\n%s", out)
	}
}
