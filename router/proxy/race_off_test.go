//go:build !race

package proxy

// raceDetector: this test binary runs under the race detector.
const raceDetector = false
