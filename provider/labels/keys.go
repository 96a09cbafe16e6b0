package labels

import "strings"

// Label keys are read in any case, as Traefik reads its labels.

// hasPrefixFold reports whether s begins with prefix in any case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// labelFold finds the label key in any case: the key as written, its value
// and whether it is there. The key in key's own spelling wins over others.
func labelFold(labels map[string]string, key string) (string, string, bool) {
	if v, ok := labels[key]; ok {
		return key, v, true
	}
	found := ""
	for k := range labels {
		if strings.EqualFold(k, key) && (found == "" || k < found) {
			found = k
		}
	}
	if found == "" {
		return key, "", false
	}
	return found, labels[found], true
}
