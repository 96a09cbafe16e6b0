package docker

import (
	"context"
	"slices"
	"strconv"
	"strings"
)

// ImageExposedPorts reads, for `levee validate` on compose files, the TCP
// ports each image EXPOSEs, from the engine at host: what the port rule
// chooses from when a service has no port label (labels.Parser). An image
// the engine does not have is left out (validate then says the EXPOSE is
// not known); an engine that cannot be reached is an error. Each engine call
// has DefaultCallTimeout.
func ImageExposedPorts(ctx context.Context, host string, images []string) (map[string][]int, error) {
	cli, err := newClient(host, "")
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	out := map[string][]int{}
	for _, ref := range images {
		if _, done := out[ref]; done || ref == "" {
			continue
		}
		var ports []int
		err := bounded(ctx, DefaultCallTimeout, func(ctx context.Context) error {
			info, err := cli.ImageInspect(ctx, ref)
			if err != nil {
				return err
			}
			if info.Config == nil {
				return nil
			}
			for p := range info.Config.ExposedPorts {
				num, proto, _ := strings.Cut(p, "/")
				if n, err := strconv.Atoi(num); err == nil && n > 0 && (proto == "" || proto == "tcp") && !slices.Contains(ports, n) {
					ports = append(ports, n)
				}
			}
			return nil
		})
		switch {
		case isNotFound(err):
			continue
		case err != nil:
			return nil, err
		}
		slices.Sort(ports)
		out[ref] = ports
	}
	return out, nil
}
