package diagnostics

// Codes of error pages (errors.*): a route that answers its backend's
// error statuses with a page another route serves. The status spec and
// the query are checked by the validator; whether the service names a
// route can only be checked where every route is known, so W078 comes
// from the router when it builds a snapshot (like W080).
const (
	// BadErrorStatus: errors.status is not a list of codes and ranges
	// of 400-599.
	BadErrorStatus Code = "W069"
	// ErrorServiceUnknown: errors.route is missing or names no route.
	ErrorServiceUnknown Code = "W078"
	// BadErrorQuery: errors.query (or errors.timeout) has an invalid
	// value.
	BadErrorQuery Code = "W079"
)

// errorPagesEntries are the codes of error pages; their Code constants are declared here too.
func errorPagesEntries() []Entry {
	return []Entry{
		{
			Code: BadErrorStatus, Severity: Warn, Title: "invalid error-page statuses",
			Effect:  "The route has no error pages: its answers reach the client as the backend sent them. Only client and server errors (400-599) can be replaced.",
			Fix:     "List codes and ranges of 400-599, comma-separated: `errors.status=500-599,404`.",
			Example: "levee.http.app.errors.status=5xx",
		},
		{
			Code: ErrorServiceUnknown, Severity: Warn, Title: "unknown error-page route",
			Effect:  "errors.route is missing, or no route has that name (a label service name or an API entrypoint name). The route's answers reach the client as the backend sent them. The diagnostic goes away as soon as a route with that name appears.",
			Fix:     "Name an existing service in `errors.route`, or deploy the service that serves the pages.",
			Example: "levee.http.app.errors.route=error-pagse",
		},
		{
			Code: BadErrorQuery, Severity: Warn, Title: "invalid error-page query",
			Effect:  "The default applies: the query `/{status}.html` (only the `{status}` placeholder is known), or the timeout of 5s.",
			Fix:     "Give an absolute path, with `{status}` where the answer's code goes: `errors.query=/{status}.html`; a timeout such as `2s`.",
			Example: "levee.http.app.errors.query={status}.html",
		},
	}
}
