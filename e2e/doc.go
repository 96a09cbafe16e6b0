// Package e2e holds Levee's end-to-end tests: the real binary as a
// subprocess, real backends, and (where an engine is reachable) the real
// Docker Engine and docker-compose. Tests that need Docker skip with a
// message when no engine is reachable, unless CI=true, where they fail.
//
// Images are built in the tests FROM scratch around static binaries (there
// is no registry), labelled levee.test=<run id>, and removed at the end even
// on failure; see package e2e/dockertest.
package e2e
