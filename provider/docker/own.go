package docker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/moby/moby/api/types/container"
)

// detectOwn finds the container Levee runs in, by its ID from mountinfo or
// by its host name (Docker sets it to the short ID, and inspect accepts an ID
// prefix). Neither matching a container (Levee not in a container) leaves
// OwnNetworks empty.
func (p *Provider) detectOwn(ctx context.Context) error {
	p.ownID, p.own, p.ownNetIDs = "", nil, nil
	var info container.InspectResponse
	found := false
	for _, candidate := range []string{p.opts.SelfID, p.opts.Hostname} {
		if candidate == "" {
			continue
		}
		var err error
		info, err = inspect(ctx, p.eng, p.opts.CallTimeout, candidate)
		if err != nil {
			if isNotFound(err) {
				continue
			}
			return fmt.Errorf("own container: %w", err)
		}
		if strings.HasPrefix(info.ID, candidate) {
			found = true
			break
		}
	}
	if !found {
		return nil
	}
	p.ownID = info.ID
	if info.NetworkSettings != nil {
		for name, ep := range info.NetworkSettings.Networks {
			p.own = append(p.own, name)
			if ep != nil && ep.NetworkID != "" {
				p.ownNetIDs = append(p.ownNetIDs, ep.NetworkID)
			}
		}
		sort.Strings(p.own)
		sort.Strings(p.ownNetIDs)
	}
	return nil
}

// containerIDFromMountinfo returns the container ID found in mount sources
// like /var/lib/docker/containers/<64 hex>/hostname, or "".
func containerIDFromMountinfo(r io.Reader) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, "/containers/")
		if i < 0 {
			continue
		}
		rest := line[i+len("/containers/"):]
		if len(rest) > 64 && rest[64] == '/' && isHex(rest[:64]) {
			return rest[:64]
		}
	}
	return ""
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
