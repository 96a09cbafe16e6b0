package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/levee-proxy/levee/provider/labels"
	"go.yaml.in/yaml/v3"
)

// composeService is what validate needs from one compose service.
type composeService struct {
	name          string
	containerName string
	labels        map[string]string
	exposed       []int
}

// readComposeFiles reads compose files the way `docker compose -f a -f b`
// merges them: services keep the order in which they first appear, later
// files add and override labels. Both labels forms (list and map) and
// deploy.labels are read; deploy.labels win over labels on the same key.
func readComposeFiles(paths []string) ([]labels.Container, error) {
	var order []string
	byName := map[string]*composeService{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read compose file: %w", err)
		}
		svcs, err := parseCompose(data)
		if err != nil {
			return nil, fmt.Errorf("parse compose file %s: %w", path, err)
		}
		for _, s := range svcs {
			cur, ok := byName[s.name]
			if !ok {
				cp := s
				byName[s.name] = &cp
				order = append(order, s.name)
				continue
			}
			if s.containerName != "" {
				cur.containerName = s.containerName
			}
			for k, v := range s.labels {
				cur.labels[k] = v
			}
			cur.exposed = append(cur.exposed, s.exposed...)
		}
	}
	// Creation times follow file order, so "the oldest replica wins" means
	// "the first service in the file" and output is deterministic.
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	out := make([]labels.Container, 0, len(order))
	for i, name := range order {
		s := byName[name]
		cname := s.containerName
		if cname == "" {
			cname = name
		}
		out = append(out, labels.Container{ID: name, Name: cname, Created: base.Add(time.Duration(i) * time.Second),
			Labels: s.labels, ExposedPorts: s.exposed})
	}
	return out, nil
}

func parseCompose(data []byte) ([]composeService, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, err
	}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("empty file")
	}
	doc := root.Content[0]
	services := mapValue(doc, "services")
	if services == nil || services.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("no services mapping")
	}
	var out []composeService
	for i := 0; i+1 < len(services.Content); i += 2 {
		name, body := services.Content[i].Value, services.Content[i+1]
		s := composeService{name: name, labels: map[string]string{}}
		if body.Kind == yaml.MappingNode {
			if cn := mapValue(body, "container_name"); cn != nil {
				s.containerName = cn.Value
			}
			if err := readLabels(mapValue(body, "labels"), s.labels); err != nil {
				return nil, fmt.Errorf("service %s: labels: %w", name, err)
			}
			if deploy := mapValue(body, "deploy"); deploy != nil {
				if err := readLabels(mapValue(deploy, "labels"), s.labels); err != nil {
					return nil, fmt.Errorf("service %s: deploy.labels: %w", name, err)
				}
			}
			s.exposed = append(s.exposed, exposedPorts(mapValue(body, "expose"))...)
			s.exposed = append(s.exposed, targetPorts(mapValue(body, "ports"))...)
		}
		out = append(out, s)
	}
	return out, nil
}

// mapValue returns the value node of key in a mapping node, or nil.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// readLabels reads labels in list form ("k=v") or map form (k: v). Scalar
// values keep their text exactly as written (0.50 stays "0.50").
func readLabels(n *yaml.Node, into map[string]string) error {
	if n == nil {
		return nil
	}
	switch n.Kind {
	case yaml.SequenceNode:
		for _, it := range n.Content {
			if it.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: want \"key=value\"", it.Line)
			}
			k, v, _ := strings.Cut(it.Value, "=")
			into[k] = v
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			v := n.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: label %s: want a scalar value", v.Line, n.Content[i].Value)
			}
			if v.Tag == "!!null" {
				into[n.Content[i].Value] = ""
				continue
			}
			into[n.Content[i].Value] = v.Value
		}
	default:
		return fmt.Errorf("line %d: want a list or a map", n.Line)
	}
	return nil
}

// exposedPorts reads `expose` items: "3000", 3000, "3000-3002", "3000/tcp".
func exposedPorts(n *yaml.Node) []int {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var out []int
	for _, it := range n.Content {
		out = append(out, portRange(it.Value)...)
	}
	return out
}

// targetPorts reads the container side of `ports`: short syntax
// "[ip:][host:]container[/proto]" and long syntax {target: 80}.
func targetPorts(n *yaml.Node) []int {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	var out []int
	for _, it := range n.Content {
		switch it.Kind {
		case yaml.ScalarNode:
			s := it.Value
			if i := strings.LastIndex(s, ":"); i >= 0 {
				s = s[i+1:]
			}
			out = append(out, portRange(s)...)
		case yaml.MappingNode:
			if t := mapValue(it, "target"); t != nil {
				out = append(out, portRange(t.Value)...)
			}
		}
	}
	return out
}

func portRange(s string) []int {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "/")
	lo, hi, isRange := strings.Cut(s, "-")
	a, err := strconv.Atoi(lo)
	if err != nil || a < 1 || a > 65535 {
		return nil
	}
	b := a
	if isRange {
		if b, err = strconv.Atoi(hi); err != nil || b < a || b > 65535 || b-a > 1000 {
			return []int{a}
		}
	}
	out := make([]int, 0, b-a+1)
	for p := a; p <= b; p++ {
		out = append(out, p)
	}
	return out
}
