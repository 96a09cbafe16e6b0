package router

import (
	"github.com/levee-proxy/levee/router/config"
	"github.com/levee-proxy/levee/router/policy"
)

// transformPolicies compiles the route's policies that change a request or
// its response (headers and CORS, redirects, path rewrites, compression).
// They hold no state across snapshots.
func transformPolicies(ep *config.Entrypoint) []policy.Policy {
	return nil
}
