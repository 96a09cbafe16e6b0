//go:build race

package h3

// raceDetector: this test binary runs under the race detector.
const raceDetector = true
