package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/provider/labels"
)

// --docker-constraints and LEVEE_DOCKER_CONSTRAINTS parse into the
// expression serve hands the provider; a bad one stops start-up with the
// position of the mistake.
func TestServeFlagsDockerConstraints(t *testing.T) {
	shop := map[string]string{"com.docker.compose.project": "shop"}
	blog := map[string]string{"com.docker.compose.project": "blog"}
	cfg, err := parseServeFlags([]string{"--docker-constraints", `Label("com.docker.compose.project","shop")`}, envOf(nil), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.DockerConstraints.Match(shop) || cfg.DockerConstraints.Match(blog) {
		t.Fatalf("constraint %q: shop %v, blog %v", cfg.DockerConstraints, cfg.DockerConstraints.Match(shop), cfg.DockerConstraints.Match(blog))
	}
	cfg, err = parseServeFlags(nil, envOf(map[string]string{"LEVEE_DOCKER_CONSTRAINTS": `!Label("com.docker.compose.project","shop")`}), &bytes.Buffer{})
	if err != nil || cfg.DockerConstraints.Match(shop) || !cfg.DockerConstraints.Match(blog) {
		t.Fatalf("from the environment: %v, %q", err, cfg.DockerConstraints)
	}
	cfg, err = parseServeFlags(nil, envOf(nil), &bytes.Buffer{})
	if err != nil || cfg.DockerConstraints != nil {
		t.Fatalf("default: %v, %q; want no constraint", err, cfg.DockerConstraints)
	}
	for _, c := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--docker-constraints", `Label("a","b") && `}, want: "at position 19"},
		{env: map[string]string{"LEVEE_DOCKER_CONSTRAINTS": `Label("a")`}, want: `LEVEE_DOCKER_CONSTRAINTS="Label(\"a\")": constraint "Label(\"a\")": at position 10`},
	} {
		_, err := parseServeFlags(c.args, envOf(c.env), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("args %v env %v: error %v, want it to say %s", c.args, c.env, err, c.want)
		}
	}
}

// validate applies the same constraint to the live engine's containers: a
// container of another project is not reported at all.
func TestValidateDockerConstraints(t *testing.T) {
	eng := testEngine()
	eng.listServices = func(context.Context, docker.HostSpec) ([]labels.Container, error) { return nil, nil }
	eng.listContainers = func(context.Context, docker.HostSpec) ([]labels.Container, error) {
		net := []labels.Network{{Name: "bridge", IP: "172.17.0.2"}}
		return []labels.Container{
			{ID: "a", Name: "shop-web-1", Networks: net, Labels: map[string]string{"com.docker.compose.project": "shop",
				"levee.enable": "true", "levee.http.web.host": "shop.com", "levee.http.web.port": "80"}},
			{ID: "b", Name: "blog-web-1", Networks: net, Labels: map[string]string{"com.docker.compose.project": "blog",
				"levee.enable": "true", "levee.http.web.host": "blog.com", "levee.http.web.port": "eighty"}},
		}, nil
	}
	out, errOut, code := validateWith(t, eng, nil, "--docker-constraints", `Label("com.docker.compose.project","shop")`)
	if code != 0 || !strings.Contains(out, "shop.com") || strings.Contains(out, "blog") || !strings.Contains(errOut, "1 containers or services left out") {
		t.Errorf("exit %d; want shop routed and blog not reported:\n%s%s", code, out, errOut)
	}
	if _, errOut, code := validateWith(t, eng, nil, "--docker-constraints", `Label(`); code != 2 || !strings.Contains(errOut, "at position 7") {
		t.Errorf("bad constraint: exit %d, %q", code, errOut)
	}
}
