package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

// Prefix is the path the API serves the dashboard under.
const Prefix = "/dashboard/"

//go:embed assets
var assets embed.FS

// securityHeaders keep the page to its own origin: scripts, styles and
// fetches only from it (so a value the page displays can never run as
// code, even if escaping failed), no framing (clickjacking on the action
// buttons), no referrer carrying the URL elsewhere.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
	"X-Content-Type-Options": "nosniff",
	"X-Frame-Options":        "DENY",
	"Referrer-Policy":        "no-referrer",
	// The files change with the binary: revalidate rather than run an old
	// page against a new API.
	"Cache-Control": "no-cache",
}

// Handler serves the embedded files under Prefix. A path outside Prefix
// is 404.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil { // the embed pattern guarantees the directory
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "dashboard assets missing: "+err.Error(), http.StatusInternalServerError)
		})
	}
	files := http.StripPrefix(Prefix[:len(Prefix)-1], http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		files.ServeHTTP(w, r)
	})
}
