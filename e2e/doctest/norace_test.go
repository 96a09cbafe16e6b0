//go:build !race

package doctest

// buildFlags match the test binary's, so the levee build shares its cache.
var buildFlags []string
