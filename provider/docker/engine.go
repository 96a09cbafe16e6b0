package docker

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"
)

// engine is the part of the Docker Engine API the provider uses: lists and
// inspects, the ping and the event stream. Its methods return the API's own
// types, unwrapped from the client's result structs, so that a fake in the
// tests is a few lines per call.
type engine interface {
	ContainerList(ctx context.Context, options client.ContainerListOptions) ([]container.Summary, error)
	ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error)
	Ping(ctx context.Context) error
	Events(ctx context.Context, options client.EventsListOptions) (<-chan events.Message, <-chan error)
	DaemonHost() string
}

// swarmEngine is the part of the Engine API Swarm mode uses, on a manager
// node.
type swarmEngine interface {
	ServiceList(ctx context.Context, options client.ServiceListOptions) ([]swarm.Service, error)
	TaskList(ctx context.Context, options client.TaskListOptions) ([]swarm.Task, error)
	NodeList(ctx context.Context, options client.NodeListOptions) ([]swarm.Node, error)
	NetworkList(ctx context.Context, options client.NetworkListOptions) ([]network.Summary, error)
}

// mobyEngine is engine and swarmEngine over the Engine API client
// (github.com/moby/moby/client).
type mobyEngine struct{ c *client.Client }

func (e mobyEngine) ContainerList(ctx context.Context, o client.ContainerListOptions) ([]container.Summary, error) {
	r, err := e.c.ContainerList(ctx, o)
	return r.Items, err
}

func (e mobyEngine) ContainerInspect(ctx context.Context, id string) (container.InspectResponse, error) {
	r, err := e.c.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	return r.Container, err
}

func (e mobyEngine) Ping(ctx context.Context) error {
	_, err := e.c.Ping(ctx, client.PingOptions{})
	return err
}

func (e mobyEngine) Events(ctx context.Context, o client.EventsListOptions) (<-chan events.Message, <-chan error) {
	r := e.c.Events(ctx, o)
	return r.Messages, r.Err
}

func (e mobyEngine) DaemonHost() string { return e.c.DaemonHost() }

// ServiceList lists the services. Engines before API v1.44 may report a
// service's networks in the spec's old Networks field only, which the API
// module no longer has: such a service (one with no TaskTemplate networks)
// is inspected, and the old field read from the raw answer.
func (e mobyEngine) ServiceList(ctx context.Context, o client.ServiceListOptions) ([]swarm.Service, error) {
	r, err := e.c.ServiceList(ctx, o)
	if err != nil {
		return nil, err
	}
	for i := range r.Items {
		s := &r.Items[i]
		if len(s.Spec.TaskTemplate.Networks) > 0 {
			continue
		}
		in, err := e.c.ServiceInspect(ctx, s.ID, client.ServiceInspectOptions{})
		if err != nil {
			return nil, fmt.Errorf("inspect service %s: %w", s.ID, err)
		}
		if old, err := legacyNetworks(in.Raw); err == nil {
			s.Spec.TaskTemplate.Networks = old
		}
	}
	return r.Items, nil
}

// legacyNetworks reads Spec.Networks, the place engines before API v1.44
// may keep a service's networks, from a service's raw inspect answer.
func legacyNetworks(raw json.RawMessage) ([]swarm.NetworkAttachmentConfig, error) {
	var v struct {
		Spec struct {
			Networks []swarm.NetworkAttachmentConfig
		}
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("read the networks of a service's inspect answer: %w", err)
	}
	return v.Spec.Networks, nil
}

func (e mobyEngine) TaskList(ctx context.Context, o client.TaskListOptions) ([]swarm.Task, error) {
	r, err := e.c.TaskList(ctx, o)
	return r.Items, err
}

func (e mobyEngine) NodeList(ctx context.Context, o client.NodeListOptions) ([]swarm.Node, error) {
	r, err := e.c.NodeList(ctx, o)
	return r.Items, err
}

func (e mobyEngine) NetworkList(ctx context.Context, o client.NetworkListOptions) ([]network.Summary, error) {
	r, err := e.c.NetworkList(ctx, o)
	return r.Items, err
}
