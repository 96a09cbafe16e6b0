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
	// ErrorFileUnusable: errors.file is not an absolute path, cannot be
	// read, is not a regular file, or is set with errors.route.
	ErrorFileUnusable Code = "W088"
	// ErrorFileTooLarge: errors.file is over 1 MiB.
	ErrorFileTooLarge Code = "W089"
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
		{
			Code: ErrorFileUnusable, Severity: Warn, Title: "unusable error-page file",
			Effect:  "The route has no error pages: its answers reach the client as the backend sent them. errors.file is not an absolute path, the file cannot be opened or read (it is read when the route is built), it is not a regular file (a directory, a device, a FIFO), it is outside the directory of --error-pages-dir once symbolic links are resolved (or Levee was started without --error-pages-dir, which turns page files off), or errors.route is set too.",
			Fix:     "Give the absolute path of a regular file Levee can read inside the directory of `--error-pages-dir` (`levee serve --error-pages-dir /etc/levee/pages` and `errors.file=/etc/levee/pages/error.html`), and set either `errors.file` or `errors.route`, not both. The file is tried again when the route is next built: when its configuration changes, or at start-up.",
			Example: "levee.http.app.errors.file=pages/error.html",
		},
		{
			Code: ErrorFileTooLarge, Severity: Warn, Title: "error-page file too large",
			Effect:  "The route has no error pages: its answers reach the client as the backend sent them. An errors.file is read whole and held in memory; one over 1 MiB is not used.",
			Fix:     "Make the page smaller than 1 MiB (move images and styles to URLs the page links), or serve it from a route with `errors.route`.",
			Example: "levee.http.app.errors.file=/srv/pages/huge.html",
		},
	}
}
