package policy

import "net/http"

// OnHeader returns w wrapped so that fn runs once, just before the
// response's final header goes out (the first WriteHeader with a status of
// 200 or more, or the first Write): the moment a policy may still change
// the response's header. Informational (1xx) headers pass unchanged. The
// wrapper passes Flush on and unwraps for http.ResponseController, so
// deadlines, flushing and hijacking keep working through it.
func OnHeader(w http.ResponseWriter, fn func(h http.Header, status int)) http.ResponseWriter {
	return &hookWriter{ResponseWriter: w, fn: fn}
}

type hookWriter struct {
	http.ResponseWriter
	fn   func(h http.Header, status int)
	done bool
}

func (h *hookWriter) WriteHeader(status int) {
	if !h.done && status >= 200 {
		h.done = true
		h.fn(h.ResponseWriter.Header(), status)
	}
	h.ResponseWriter.WriteHeader(status)
}

func (h *hookWriter) Write(b []byte) (int, error) {
	if !h.done {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(b)
}

// Flush sends what is buffered; it writes the header first, as net/http's
// own Flush does.
func (h *hookWriter) Flush() {
	if !h.done {
		h.WriteHeader(http.StatusOK)
	}
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap is for http.ResponseController.
func (h *hookWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }
