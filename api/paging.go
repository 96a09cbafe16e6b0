package api

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/levee-proxy/levee/router/status"
)

// GET /entrypoints pages and filters: at 10,000 routes the whole list is
// megabytes. Pages are ordered by id and the cursor is the last id of a
// page (after=), so a page stays right while entrypoints come and go
// between requests (an offset would skip or repeat).

// MaxPageLimit bounds limit=.
const MaxPageLimit = 10000

// listQuery is what GET /entrypoints asks for.
type listQuery struct {
	limit  int    // 0: all
	after  string // ids strictly after this one
	host   string // only entrypoints with this hostname (case-insensitive)
	source string // only entrypoints of this source
}

// listParams documents the query parameters of GET /entrypoints.
func listParams() []queryParam {
	return []queryParam{
		{name: "limit", typ: "integer", doc: fmt.Sprintf("At most this many entrypoints (1-%d), ordered by id; the answer's next is the after= of the next page. Default: all.", MaxPageLimit)},
		{name: "after", doc: "Only entrypoints whose id sorts after this one (the previous page's next)."},
		{name: "host", doc: "Only entrypoints routing this hostname (exact, case-insensitive; a wildcard entrypoint matches its own pattern, e.g. *.example.com)."},
		{name: "source", doc: "Only entrypoints of this source: api, docker, swarm or file."},
	}
}

// parseListQuery reads the query; an unknown parameter is an error, as
// for writes, so a misspelt filter does not return everything.
func parseListQuery(raw string) (listQuery, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return listQuery{}, fmt.Errorf("query %q: %w", raw, err)
	}
	var q listQuery
	for name, vs := range v {
		if len(vs) != 1 {
			return listQuery{}, fmt.Errorf("query parameter %s is given %d times: give it once", name, len(vs))
		}
		val := vs[0]
		switch name {
		case "limit":
			n, err := strconv.Atoi(val)
			if err != nil || n < 1 || n > MaxPageLimit {
				return listQuery{}, fmt.Errorf("query parameter limit %q: want an integer from 1 to %d", val, MaxPageLimit)
			}
			q.limit = n
		case "after":
			q.after = val
		case "host":
			q.host = strings.ToLower(val)
		case "source":
			q.source = val
		default:
			return listQuery{}, fmt.Errorf("unknown query parameter %q: GET /entrypoints takes limit, after, host and source", name)
		}
	}
	return q, nil
}

// page filters, orders and cuts all; next is set when entrypoints remain.
func (q listQuery) page(all []status.EntrypointStatus) (out []status.EntrypointStatus, next string) {
	out = make([]status.EntrypointStatus, 0, min(len(all), max(q.limit, 16)))
	for _, st := range all {
		if q.after != "" && st.Entrypoint.ID <= q.after {
			continue
		}
		if q.source != "" && st.Entrypoint.Source != q.source {
			continue
		}
		if q.host != "" && !slices.ContainsFunc(st.Entrypoint.Hosts, func(h string) bool { return strings.EqualFold(h, q.host) }) {
			continue
		}
		out = append(out, st)
	}
	slices.SortFunc(out, func(a, b status.EntrypointStatus) int { return strings.Compare(a.Entrypoint.ID, b.Entrypoint.ID) })
	if q.limit > 0 && len(out) > q.limit {
		out = out[:q.limit]
		next = out[len(out)-1].Entrypoint.ID
	}
	return out, next
}
