package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
)

// Offline, a service without a port label, ports or expose gets its
// image's EXPOSE from the engine when it has the image, as serve chooses:
// not port 80.
func TestValidateReadsTheImagesExposedPort(t *testing.T) {
	eng := testEngine()
	var asked []string
	eng.imageExposedPorts = func(_ context.Context, host string, images []string) (map[string][]int, error) {
		asked = append(asked, images...)
		return map[string][]int{"example/app:1": {9000}}, nil
	}
	compose := `services:
  app:
    image: example/app:1
    labels:
      levee.enable: "true"
      levee.http.app.host: app.example.com
  other:
    image: example/unknown:1
    labels:
      levee.enable: "true"
      levee.http.other.host: other.example.com
  pinned:
    image: example/pinned:1
    ports: ["8081:8080"]
    labels:
      levee.enable: "true"
      levee.http.pinned.host: pinned.example.com
`
	path := t.TempDir() + "/compose.yml"
	if err := os.WriteFile(path, []byte(compose), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := validateWith(t, eng, nil, path)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	for _, want := range []string{"app.example.com -> app:9000", "using 9000, the container's only exposed port",
		"other.example.com -> other:80", "offline, the image's EXPOSE is not known", "pinned.example.com -> pinned:8080"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if slices.Contains(asked, "example/pinned:1") || !slices.Contains(asked, "example/app:1") {
		t.Errorf("engine asked about %v: want only the images of services without ports", asked)
	}
}
