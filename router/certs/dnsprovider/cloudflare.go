package dnsprovider

import (
	"context"

	"github.com/caddyserver/certmagic"
	"github.com/libdns/cloudflare"
)

// newCloudflare: CLOUDFLARE_API_TOKEN, and CLOUDFLARE_ZONE_TOKEN for an
// API token scoped to one zone (package doc).
func newCloudflare(_ context.Context, env Env) (certmagic.DNSProvider, error) {
	token, err := env.required("CLOUDFLARE_API_TOKEN")
	if err != nil {
		return nil, err
	}
	zone, err := env.secret("CLOUDFLARE_ZONE_TOKEN")
	if err != nil {
		return nil, err
	}
	return &cloudflare.Provider{APIToken: token, ZoneToken: zone}, nil
}
