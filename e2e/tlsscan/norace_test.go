//go:build !race

package tlsscan

// raceEnabled: the levee build matches the test binary's, so that it
// shares its build cache.
const raceEnabled = false
