// Package docker is Levee's Docker provider: it watches a Docker Engine and
// hands the router the entrypoints that the labels of the running containers
// describe.
//
// The model: the provider keeps a cache of facts (labels.Container) about
// every running, unpaused container. A full sync (list + inspect) fills the
// cache; after that the engine's event stream keeps it current, one inspect
// per affected container (start, unpause, health_status, rename, network
// connect/disconnect) or a plain removal (die, stop, destroy, pause, and
// kill with a terminating signal: a stopping container leaves rotation when
// its stop begins, see stopping.go). On each
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
// Parser.OwnNetworks, so it can pick a network Levee can reach.
package docker
