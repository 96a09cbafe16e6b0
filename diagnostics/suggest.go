package diagnostics

import "strings"

// DidYouMean returns a hint naming the candidate closest to got ("did you
// mean circuitBreaker.threshold?"), or "" when none is close enough. A
// candidate that differs only in case always qualifies; otherwise the edit
// distance must be at most a third of the longer name (and at least 2 is
// allowed), so short typos are caught without suggesting unrelated keys.
// Ties go to the candidate listed first, so the hint is deterministic.
func DidYouMean(got string, candidates []string) string {
	best, ok := Closest(got, candidates)
	if !ok {
		return ""
	}
	return "did you mean " + best + "?"
}

// Closest returns the candidate closest to got under the rules of
// DidYouMean, and false when none is close enough.
func Closest(got string, candidates []string) (string, bool) {
	best, bestDist := "", -1
	lower := strings.ToLower(got)
	for _, c := range candidates {
		if c == got {
			continue
		}
		d := editDistance(lower, strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 {
		return "", false
	}
	limit := max(len(got), len(best)) / 3
	if limit < 2 {
		limit = 2
	}
	if bestDist > limit {
		return "", false
	}
	return best, true
}

// editDistance is the Levenshtein distance between a and b, in bytes. Keys
// are ASCII; anything else only makes the distance larger, which is fine for
// suggestions.
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		// Suggestions for absurd keys are useless and would cost O(n·m).
		return max(len(a), len(b))
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
