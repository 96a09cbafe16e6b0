package dockertest

import (
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// EchoPort is the port cmd/echo listens on in its image.
const EchoPort = 8080

// EchoHealthURL is the health endpoint cmd/echo probes with -healthcheck
// inside its own container.
const EchoHealthURL = "http://127.0.0.1:8080/_echo/health"

// EchoDockerfileHealthcheck is a Dockerfile HEALTHCHECK line for BuildImage's
// dockerfileExtra that bakes a fast health check into an echo image.
const EchoDockerfileHealthcheck = `HEALTHCHECK --interval=1s --timeout=5s --retries=1 CMD ["/echo","-healthcheck","` + EchoHealthURL + `"]`

// EchoImage builds the cmd/echo image (EXPOSE 8080, no HEALTHCHECK) for t
// and returns its tag.
func EchoImage(t testing.TB, cli *client.Client) string {
	t.Helper()
	return BuildImage(t, cli, "./cmd/echo", "EXPOSE 8080\n")
}

// EchoHealthcheck is a fast HEALTHCHECK for echo containers (Spec.Healthcheck):
// it runs `/echo -healthcheck` every interval, and one failure marks the
// container unhealthy, so tests flip health with POST /_echo/fail and
// POST /_echo/ok.
func EchoHealthcheck(interval time.Duration) *container.HealthConfig {
	return &container.HealthConfig{
		Test:     []string{"CMD", "/echo", "-healthcheck", EchoHealthURL},
		Interval: interval,
		Timeout:  5 * time.Second,
		Retries:  1,
	}
}
