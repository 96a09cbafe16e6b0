// Package e2e holds Levee's end-to-end tests: the real binary as a
// subprocess, real backends, and (where an engine is reachable) the real
// Docker Engine and docker-compose. Tests that need Docker skip with a
// message when no engine is reachable, unless CI=true, where they fail.
//
// Images are built in the tests FROM scratch around static binaries (there
// is no registry), labelled levee.test=<run id>, and removed at the end even
// on failure; see package e2e/dockertest.
//
// The Swarm tests (swarm_test.go) initialise a single-node swarm when the
// engine is in none and leave it at the end; a swarm already there is used
// and left alone. Levee runs there as a container (built from cmd/levee)
// attached to the test's overlay network, since overlay addresses are not
// reachable from the host.
package e2e
