package config

import "time"

// Transform holds a route's policies that change a request or its
// response (headers and CORS, redirects, path rewrites, compression) and
// its sticky sessions. A nil member is a policy the route does
// not have; the zero Transform is a route without any. The validator
// fills them; router/policy compiles them when a snapshot is built.
type Transform struct {
	Headers          *Headers          `json:"headers,omitempty"`
	CORS             *CORS             `json:"cors,omitempty"`
	Compress         *Compress         `json:"compress,omitempty"`
	RedirectScheme   *RedirectScheme   `json:"redirect_scheme,omitempty"`
	RedirectRegex    *RedirectRegex    `json:"redirect_regex,omitempty"`
	ReplacePath      string            `json:"replace_path,omitempty"`
	ReplacePathRegex *ReplacePathRegex `json:"replace_path_regex,omitempty"`
	Sticky           *Sticky           `json:"sticky,omitempty"`
	Errors           *ErrorPages       `json:"errors,omitempty"`
}

// IsZero reports whether the route has none of these policies.
func (t Transform) IsZero() bool {
	return t.Headers == nil && t.CORS == nil && t.Compress == nil && t.RedirectScheme == nil &&
		t.RedirectRegex == nil && t.ReplacePath == "" && t.ReplacePathRegex == nil && t.Sticky == nil && t.Errors == nil
}

// Headers are the header changes of a route, with Traefik's meaning: a
// request header is set before the request goes on, a response header
// before the response goes back; an empty value removes the header. Names
// are canonical (textproto) and never a hop-by-hop header or Host (W066).
type Headers struct {
	Request  map[string]string `json:"custom_request_headers,omitempty"`
	Response map[string]string `json:"custom_response_headers,omitempty"`
	// RequestAdd and ResponseAdd add a value beside the header's others
	// (after the sets and removals above).
	RequestAdd  map[string]string `json:"add_request_headers,omitempty"`
	ResponseAdd map[string]string `json:"add_response_headers,omitempty"`
	// The security headers: X-Frame-Options: DENY, X-Content-Type-Options:
	// nosniff, Referrer-Policy and Permissions-Policy.
	FrameDeny          bool   `json:"frame_deny,omitempty"`
	ContentTypeNosniff bool   `json:"content_type_nosniff,omitempty"`
	ReferrerPolicy     string `json:"referrer_policy,omitempty"`
	PermissionsPolicy  string `json:"permissions_policy,omitempty"`
}

// CORS answers cross-origin requests (the Fetch standard's CORS protocol):
// Levee answers preflights itself and adds the Access-Control-* headers to
// the responses of allowed origins.
type CORS struct {
	// AllowOrigins are origins ("https://app.example.com") or "*".
	AllowOrigins     []string      `json:"allow_origins,omitempty"`
	AllowMethods     []string      `json:"allow_methods,omitempty"`
	AllowHeaders     []string      `json:"allow_headers,omitempty"`
	ExposeHeaders    []string      `json:"expose_headers,omitempty"`
	AllowCredentials bool          `json:"allow_credentials,omitempty"`
	MaxAge           time.Duration `json:"max_age,omitempty"`
}

// Compression encodings, in Levee's default order of preference.
const (
	EncodingZstd   = "zstd"
	EncodingBrotli = "br"
	EncodingGzip   = "gzip"
)

// DefaultEncodings is the order of preference among encodings the client
// accepts with the same q-value: zstd compresses fastest for its ratio,
// brotli best for text, gzip is what every client has.
var DefaultEncodings = []string{EncodingZstd, EncodingBrotli, EncodingGzip}

// DefaultMinResponseBodyBytes is the smallest body worth compressing, as
// Traefik's: below it the encoding's framing eats the gain.
const DefaultMinResponseBodyBytes = 1024

// Compress compresses responses.
type Compress struct {
	// Encodings in order of preference; never empty once validated.
	Encodings            []string `json:"encodings"`
	MinResponseBodyBytes int      `json:"min_response_body_bytes"`
	// ExcludedContentTypes are media types (no parameters) never compressed.
	ExcludedContentTypes []string `json:"excluded_content_types,omitempty"`
}

// RedirectScheme redirects requests that did not come on Scheme.
type RedirectScheme struct {
	Scheme    string `json:"scheme"`
	Port      int    `json:"port,omitempty"` // 0: the scheme's default port
	Permanent bool   `json:"permanent,omitempty"`
}

// RedirectRegex redirects requests whose URL matches Regex to Replacement.
type RedirectRegex struct {
	Regex       string `json:"regex"`
	Replacement string `json:"replacement"`
	Permanent   bool   `json:"permanent,omitempty"`
}

// ReplacePathRegex rewrites the request path: Regex's match is replaced
// by Replacement ($1 names a group).
type ReplacePathRegex struct {
	Regex       string `json:"regex"`
	Replacement string `json:"replacement"`
}

// SameSite values of the sticky cookie.
const (
	SameSiteNone   = "none"
	SameSiteLax    = "lax"
	SameSiteStrict = "strict"
)

// DefaultStickyCookie is the sticky cookie's name when none is given.
const DefaultStickyCookie = "levee_sticky"

// Sticky keeps a client on one backend with a cookie that names the
// backend by an opaque id.
type Sticky struct {
	CookieName string `json:"cookie_name"`
	Secure     bool   `json:"secure,omitempty"`
	HTTPOnly   bool   `json:"http_only,omitempty"`
	SameSite   string `json:"same_site,omitempty"`
}
