package labels

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// port is the backend port of member m: the port label, else the port
// rule's choice (I002 says which).
func (p Parser) port(m, win candidate, keyOf func(string) string) (int, []diagnostics.Diagnostic) {
	if win.cfg.Port != 0 {
		return win.cfg.Port, nil
	}
	port, why := choosePort(m.c.ExposedPorts)
	if p.Offline && len(m.c.ExposedPorts) == 0 {
		// A compose file does not say what the image EXPOSEs; the live
		// engine may choose differently.
		why += "; offline, the image's EXPOSE is not known"
	}
	// A port label that was given but is invalid (W001 says why) is not
	// a missing one.
	what, value, hint := "no port label", "", "set "+keyOf("port")+" to choose"
	if _, raw, given := labelFold(win.fields, "port"); given {
		what, value, hint = "invalid port label (W001)", raw, "fix "+keyOf("port")
	}
	return port, []diagnostics.Diagnostic{diagnostics.New(diagnostics.PortDefaulted, p.source(m.c, m.svc), keyOf("port"), value, strconv.Itoa(port),
		fmt.Sprintf("%s: using %d, %s", what, port, why), hint)}
}

// choosePort applies the port rule: the only exposed port, else the lowest
// exposed port, else 80.
func choosePort(exposed []int) (int, string) {
	var ports []int
	seen := map[int]bool{}
	for _, pt := range exposed {
		if pt >= 1 && pt <= 65535 && !seen[pt] {
			seen[pt] = true
			ports = append(ports, pt)
		}
	}
	sort.Ints(ports)
	switch len(ports) {
	case 0:
		return config.DefaultPort, "the default (the container exposes no port)"
	case 1:
		return ports[0], "the container's only exposed port"
	}
	strs := make([]string, len(ports))
	for i, pt := range ports {
		strs[i] = strconv.Itoa(pt)
	}
	return ports[0], "the lowest of the exposed ports " + strings.Join(strs, ", ")
}
