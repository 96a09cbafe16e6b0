package fleet

import (
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"
)

// NewClient returns the Redis client for a store URL:
//
//   - redis://[user:pass@]host:port[/db] or rediss:// (TLS): one server;
//   - the same with ?master_name=NAME (and more ?addr=host:port): the
//     addresses are Sentinels that name the master;
//   - the same with ?cluster=true (or several ?addr=host:port): a Redis
//     Cluster, seeded with every address.
//
// Other query parameters are go-redis options (dial_timeout,
// read_timeout, pool_size, ...). Commands honour their context's deadline
// (ContextTimeoutEnabled): a flush's timeout is what makes a slow store
// a fallback within one flush interval.
func NewClient(raw string) (redis.UniversalClient, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("breaker store %q: %w", redact(raw), err)
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return nil, fmt.Errorf("breaker store %q: scheme %q: want redis:// or rediss://", redact(raw), u.Scheme)
	}
	q := u.Query()
	switch {
	case q.Get("master_name") != "":
		o, err := redis.ParseFailoverURL(raw)
		if err != nil {
			return nil, fmt.Errorf("breaker store %q (sentinel): %w", redact(raw), err)
		}
		o.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(o), nil
	case q.Get("cluster") == "true" || len(q["addr"]) > 0:
		q.Del("cluster")
		u.RawQuery = q.Encode()
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, fmt.Errorf("breaker store %q (cluster): %w", redact(raw), err)
		}
		o.ContextTimeoutEnabled = true
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("breaker store %q: %w", redact(raw), err)
	}
	o.ContextTimeoutEnabled = true
	return redis.NewClient(o), nil
}

// redact hides a URL's password for error messages and logs.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
