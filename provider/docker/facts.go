package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/levee-proxy/levee/provider/labels"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// routable reports whether a container can serve traffic: running, not
// paused, not restarting.
func routable(info container.InspectResponse) bool {
	s := info.State
	return s != nil && s.Running && !s.Paused && !s.Restarting
}

// facts converts an inspect answer into what the label grammar needs.
func facts(info container.InspectResponse) labels.Container {
	c := labels.Container{
		ID:   info.ID,
		Name: strings.TrimPrefix(info.Name, "/"),
	}
	if t, err := time.Parse(time.RFC3339Nano, info.Created); err == nil {
		c.Created = t
	}
	if info.Config != nil {
		if len(info.Config.Labels) > 0 {
			c.Labels = make(map[string]string, len(info.Config.Labels))
			for k, v := range info.Config.Labels {
				c.Labels[k] = v
			}
		}
		for p := range info.Config.ExposedPorts {
			if p.Proto() != "tcp" {
				continue
			}
			if n := int(p.Num()); n > 0 && !slices.Contains(c.ExposedPorts, n) {
				c.ExposedPorts = append(c.ExposedPorts, n)
			}
		}
		sort.Ints(c.ExposedPorts)
		if hc := info.Config.Healthcheck; hc != nil && len(hc.Test) > 0 && hc.Test[0] != "NONE" {
			c.HasHealthcheck = true
		}
	}
	if info.State != nil && info.State.Health != nil && info.State.Health.Status != container.NoHealthcheck {
		c.HasHealthcheck = true
		c.Health = string(info.State.Health.Status)
	}
	if c.HasHealthcheck && c.Health == "" {
		c.Health = string(container.Starting)
	}
	if info.NetworkSettings != nil {
		for name, ep := range info.NetworkSettings.Networks {
			n := labels.Network{Name: name}
			if ep != nil && ep.IPAddress.IsValid() {
				n.IP = ep.IPAddress.String()
			}
			if ep != nil {
				n.ID = ep.NetworkID
			}
			c.Networks = append(c.Networks, n)
		}
		sort.Slice(c.Networks, func(i, j int) bool { return c.Networks[i].Name < c.Networks[j].Name })
		c.PublishedPorts = publishedPorts(info)
	}
	return c
}

// listFacts lists running containers and inspects each relevant one (see
// labels.Parser.Relevant; the list carries every container's labels), each
// call within timeout. A container that vanishes between list and inspect
// is skipped. The engine's own label filter cannot express "any label with
// this prefix", so the list is filtered here; the cost that matters, one
// inspect per container, is spent only on relevant ones.
func listFacts(ctx context.Context, eng engine, timeout time.Duration, relevant func(map[string]string) bool) (map[string]labels.Container, error) {
	var list []container.Summary
	err := bounded(ctx, timeout, func(ctx context.Context) (err error) {
		list, err = eng.ContainerList(ctx, client.ContainerListOptions{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list containers at %s: %w", eng.DaemonHost(), err)
	}
	out := make(map[string]labels.Container, len(list))
	for _, s := range list {
		if !relevant(s.Labels) {
			continue
		}
		info, err := inspect(ctx, eng, timeout, s.ID)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return nil, err
		}
		if routable(info) {
			out[info.ID] = facts(info)
		}
	}
	return out, nil
}

// inspect inspects one container within timeout. The error names the
// container and the engine, and wraps the client's (isNotFound sees
// through it).
func inspect(ctx context.Context, eng engine, timeout time.Duration, id string) (container.InspectResponse, error) {
	var info container.InspectResponse
	err := bounded(ctx, timeout, func(ctx context.Context) (err error) {
		info, err = eng.ContainerInspect(ctx, id)
		return err
	})
	if err != nil {
		return info, fmt.Errorf("inspect container %s at %s: %w", id, eng.DaemonHost(), err)
	}
	return info, nil
}

// bounded runs one engine call with a context that ends after timeout, so a
// hung engine becomes an error instead of a stuck provider. When the
// deadline is what ended the call, the error says so.
func bounded(ctx context.Context, timeout time.Duration, call func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := call(cctx)
	if err != nil && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %v: %w", timeout, err)
	}
	return err
}

// sortedFacts returns the cache's containers ordered by name then ID, so the
// parser sees the same input for the same set.
func sortedFacts(cache map[string]labels.Container) []labels.Container {
	out := make([]labels.Container, 0, len(cache))
	for _, c := range cache {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out
}
