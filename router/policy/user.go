package policy

import "net/http"

// UserRecorder is what the proxy's response writer offers to hear the
// name of the user a policy authenticated (the access log's %u).
type UserRecorder interface {
	RecordUser(name string)
}

// RecordUser tells the first UserRecorder in w's chain of wrappers
// (followed by Unwrap, as http.ResponseController does) that the request
// was authenticated as name. Without one it does nothing.
func RecordUser(w http.ResponseWriter, name string) {
	for w != nil {
		if r, ok := w.(UserRecorder); ok {
			r.RecordUser(name)
			return
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return
		}
		w = u.Unwrap()
	}
}
