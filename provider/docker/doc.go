// Package docker is Levee's Docker provider: it watches a Docker Engine and
// hands the router the entrypoints that the labels of the running containers
// describe.
//
// The model: the provider keeps a cache of facts (labels.Container) about
// every running, unpaused container that the parser can make something of
// (labels.Parser.Relevant: a <prefix>.* or traefik.* label, or every
// container with exposedByDefault). A full sync (list + inspect) fills the
// cache; after that the engine's event stream keeps it current, one inspect
// per affected container (start, unpause, health_status, rename, network
// connect/disconnect) or a plain removal (die, stop, destroy, pause, and
// kill with a terminating signal: a stopping container leaves rotation when
// its stop begins, see stopping.go). The list and the container events
// carry labels, so an unrelated container costs no inspect, no cache entry
// and no log line: a host with hundreds of unrelated containers and
// healthchecks costs the provider a label scan per event. A network event
// carries no labels; it concerns a cached container or none (a relevant
// container that is running is cached, and one that is not yet running
// arrives with its start event). On each
// publish the whole cache is parsed (labels.Parser.Parse, a pure function of
// the complete set) and sent to the sink as one config.SourceUpdate: the
// provider always replaces its whole set. A change after a quiet period is
// published at once; the changes that follow within Options.Debounce are
// collected (a timer, never a sleep per event) and published together when
// the window ends, so a burst costs one rebuild per window.
//
// Every engine call (ping, list, inspect, opening the event stream) has a
// deadline, Options.CallTimeout, so an engine that accepts connections and
// never answers becomes an error rather than a stuck provider. Docker sends
// nothing on an idle stream, so while connected a watchdog pings the engine
// every Options.PingInterval; a failed ping ends the connection. When the
// stream or the ping fails, or the engine goes away, the provider reconnects
// with capped exponential backoff with jitter (Options.RetryMin to
// RetryMax, reset once a connection has stayed up through a ping) and
// resyncs fully, since events may have been missed; a periodic full resync
// (Options.ResyncInterval) is a safety net. An engine that answers but
// gives no event stream is still listed on every retry, so routes follow
// it. An engine that is absent at start-up is logged once as an error
// naming the address, then retried quietly: the provider never gives up
// while its context lives. Status and the levee_provider_* metrics report
// the connection state (connecting, connected, disconnected).
//
// When Levee itself runs in a container (a container whose ID starts with
// the host name), that container's networks are passed to the parser as
// Parser.OwnNetworks, so it can pick a network Levee can reach; when no
// container of its own is found, Parser.OnHost is set, so that Swarm tasks
// are reached through the ports they publish in host mode.
//
// Swarm mode (Options.Swarm, `levee serve --swarm`) watches the Swarm
// services of the engine, a manager, with the same session (reconnect,
// backoff, watchdog, resync, debounce, status and metrics, labelled
// provider="swarm"): the object is the service, whose labels are read with
// the same grammar (Parser.Source "swarm", entrypoint IDs <service>@swarm),
// and its backends are its tasks that run, are meant to run, and sit on a
// node that is ready and not drained (labels.Container with Service and
// Tasks). The engine sends service and node events, and container events
// for the tasks of this node only, never for a task stopping on another
// node, so each relevant event marks the swarm stale and one re-list
// (services, tasks, nodes, networks) follows when the change is published;
// and the swarm is re-listed every SwarmSettle for a while after an event
// and while a labelled service runs another number of tasks than it wants
// (scaling shows within it; for at most a minute), else every SwarmPoll.
// A task whose container this node sees being stopped leaves the routes
// at once, ahead of the re-list. A task's host-mode ports (the way in for
// a Levee on the host) are read from its container when this engine runs
// it, since the task's status lists the 0.0.0.0 and [::] ports without
// their addresses and the engine numbers them independently (see
// hostports.go).
package docker
