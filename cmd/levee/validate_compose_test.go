package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeFiles writes name → content into a fresh directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// validateIn runs validate with stdin and env.
func validateIn(t *testing.T, stdin string, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runValidate(context.Background(), testEngine(), args, strings.NewReader(stdin), &out, &errOut, envOf(env))
	return out.String(), errOut.String(), code
}

const interpolated = `
services:
  app:
    image: example/app
    labels:
      levee.enable: "true"
      levee.http.app.host: ${APP_HOST:-app.example.com}
      levee.http.app.port: "${APP_PORT-8080}"
`

func TestValidateComposeInterpolation(t *testing.T) {
	dir := writeFiles(t, map[string]string{"compose.yml": interpolated})
	file := filepath.Join(dir, "compose.yml")
	out, errOut, code := validateIn(t, "", nil, file)
	if code != 0 || !strings.Contains(out, "app.example.com -> app:8080") {
		t.Fatalf("defaults: exit %d, stderr %q\n%s", code, errOut, out)
	}
	out, _, code = validateIn(t, "", map[string]string{"APP_HOST": "shop.example.org", "APP_PORT": "9000"}, file)
	if code != 0 || !strings.Contains(out, "shop.example.org -> app:9000") {
		t.Fatalf("from the environment: exit %d\n%s", code, out)
	}
}

func TestValidateComposeEnvFiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"compose.yml": interpolated,
		".env":        "APP_HOST=dotenv.example.com\n",
		"prod.env":    "APP_HOST=prod.example.com\nAPP_PORT=7000\n",
	})
	file := filepath.Join(dir, "compose.yml")
	out, _, code := validateIn(t, "", nil, file)
	if code != 0 || !strings.Contains(out, "dotenv.example.com -> app:8080") {
		t.Fatalf(".env beside the file: exit %d\n%s", code, out)
	}
	out, _, code = validateIn(t, "", nil, "--env-file", filepath.Join(dir, "prod.env"), file)
	if code != 0 || !strings.Contains(out, "prod.example.com -> app:7000") {
		t.Fatalf("--env-file: exit %d\n%s", code, out)
	}
	// The environment wins over env files, as for docker compose.
	out, _, _ = validateIn(t, "", map[string]string{"APP_HOST": "shell.example.com"}, "--env-file", filepath.Join(dir, "prod.env"), file)
	if !strings.Contains(out, "shell.example.com -> app:7000") {
		t.Fatalf("environment over --env-file:\n%s", out)
	}
}

func TestValidateComposeRequiredVariable(t *testing.T) {
	dir := writeFiles(t, map[string]string{"compose.yml": `
services:
  app:
    image: example/app
    environment:
      TOKEN: ${TOKEN:?set TOKEN}
    labels:
      levee.enable: "true"
      levee.http.app.host: app.example.com
      levee.http.app.port: "80"
`})
	out, errOut, code := validateIn(t, "", nil, filepath.Join(dir, "compose.yml"))
	if code != 0 || !strings.Contains(out, "routed") || !strings.Contains(errOut, "required variable TOKEN is not set") {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
}

func TestValidateComposeAnchorsMergeKeysAndExtensions(t *testing.T) {
	dir := writeFiles(t, map[string]string{"compose.yml": `
x-levee: &levee
  levee.enable: "true"
  levee.http.api.port: "9000"
x-image: &image
  image: example/api
services:
  api:
    <<: *image
    labels:
      <<: *levee
      levee.http.api.host: api.example.com
  api2:
    <<: *image
    labels:
      <<: *levee
      levee.http.api.host: api.example.com
      levee.http.api.port: "9001"
`})
	out, errOut, code := validateIn(t, "", nil, filepath.Join(dir, "compose.yml"))
	if code != 0 {
		t.Fatalf("merge keys must load: exit %d, stderr %q\n%s", code, errOut, out)
	}
	if !strings.Contains(out, "api.example.com -> api:9000") || !strings.Contains(out, "api.example.com -> api2:9000") || !strings.Contains(out, "W031") {
		t.Fatalf("want api and api2 as replicas of api on 9000 (the oldest's port) with W031:\n%s", out)
	}
}

func TestValidateComposeExtendsAndProfiles(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"base.yml": `
services:
  base:
    image: example/web
    labels:
      levee.enable: "true"
      levee.http.web.port: "8080"
`,
		"compose.yml": `
services:
  web:
    extends: {file: base.yml, service: base}
    labels:
      levee.http.web.host: web.example.com
  debug:
    image: example/debug
    profiles: [debug]
    labels:
      levee.enable: "true"
      levee.http.debug.host: debug.example.com
      levee.http.debug.port: "80"
`})
	file := filepath.Join(dir, "compose.yml")
	out, errOut, code := validateIn(t, "", nil, file)
	if code != 0 || !strings.Contains(out, "web.example.com -> web:8080") || strings.Contains(out, "debug") {
		t.Fatalf("extends merges labels, the debug profile is off: exit %d, stderr %q\n%s", code, errOut, out)
	}
	out, _, _ = validateIn(t, "", nil, "--profile", "debug", file)
	if !strings.Contains(out, "debug.example.com -> debug:80") {
		t.Fatalf("--profile debug:\n%s", out)
	}
}

func TestValidateComposeSeveralFilesAndStdin(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"compose.yml": `
services:
  app:
    image: example/app
    labels:
      levee.enable: "true"
      levee.http.app.host: app.example.com
      levee.http.app.port: "80"
`,
	})
	override := `
services:
  app:
    labels:
      levee.http.app.host: override.example.com
`
	out, errOut, code := validateIn(t, override, nil, "-f", filepath.Join(dir, "compose.yml"), "-f", "-")
	if code != 0 || !strings.Contains(out, "override.example.com -> app:80") {
		t.Fatalf("-f file -f - (stdin overrides): exit %d, stderr %q\n%s", code, errOut, out)
	}
	_, errOut, code = validateIn(t, override, nil, "-", "-")
	if code != 2 || !strings.Contains(errOut, "only once") {
		t.Fatalf("stdin twice: exit %d, stderr %q", code, errOut)
	}
}

func TestValidateComposeDeployLabelsAreSwarmServiceLabels(t *testing.T) {
	out, errOut, code := validateIn(t, `
services:
  web:
    image: example/web
    labels:
      levee.enable: "true"
      levee.http.web.host: web.example.com
      levee.http.web.port: "8080"
    deploy:
      labels:
        levee.enable: "true"
        levee.http.web.host: web.example.com
        levee.http.web.port: "eighty"
`, nil, "--format", "json", "-")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q\n%s", code, errOut, out)
	}
	for _, want := range []string{`"provider": "docker"`, `"provider": "swarm"`, `"code": "W001"`, `"swarm": true`} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %s:\n%s", want, out)
		}
	}
	// The W001 is the swarm row's, the container row routes cleanly.
	text, _, _ := validateIn(t, `
services:
  web:
    image: example/web
    deploy:
      labels:
        levee.enable: "true"
        levee.http.web.host: web.example.com
        levee.http.web.port: "eighty"
`, nil, "-")
	if !hasRow(text, "degraded", "web", "web") || !strings.Contains(text, "[swarm]") || !strings.Contains(text, "W001") {
		t.Fatalf("want the swarm service degraded with W001:\n%s", text)
	}
}
