package config

import (
	"strconv"

	"github.com/levee-proxy/levee/diagnostics"
)

// KindMap is a field that holds named values: in labels one key per name
// (<field>.<Name>=<value>) or one "Name: value" line per item, in JSON an
// object.
const KindMap Kind = "map"

// transformPolicyFields are the rows of the policies that change a request or response: headers and CORS, redirects, path rewrites, compression, sticky sessions.
func transformPolicyFields() []Field {
	return []Field{
		// Headers.
		{Label: "headers.customRequestHeaders", JSON: "config.headers.custom_request_headers", Kind: KindMap, Default: "(none)", Code: diagnostics.BadHeaders,
			Doc:     "Request headers set before the request goes to the backend (Traefik's customRequestHeaders): one label per header, `headers.customRequestHeaders.X-Name=value`; an empty value removes the header. Hop-by-hop headers, Host and Content-Length are Levee's (W066).",
			Example: "X-Script-Name: app", rw: headerMap(func(h *Headers) *map[string]string { return &h.Request })},
		{Label: "headers.customResponseHeaders", JSON: "config.headers.custom_response_headers", Kind: KindMap, Default: "(none)", Code: diagnostics.BadHeaders,
			Doc:     "Response headers set before the response goes back to the client, over the backend's; an empty value removes the header (`headers.customResponseHeaders.Server=`).",
			Example: "Cache-Control: no-store", rw: headerMap(func(h *Headers) *map[string]string { return &h.Response })},
		{Label: "headers.addRequestHeaders", JSON: "config.headers.add_request_headers", Kind: KindMap, Default: "(none)", Code: diagnostics.BadHeaders,
			Doc:     "Request headers added beside the client's values of the same header (after customRequestHeaders), one label per header: `headers.addRequestHeaders.X-Tag=levee`.",
			Example: "X-Tag: levee", rw: headerMap(func(h *Headers) *map[string]string { return &h.RequestAdd })},
		{Label: "headers.addResponseHeaders", JSON: "config.headers.add_response_headers", Kind: KindMap, Default: "(none)", Code: diagnostics.BadHeaders,
			Doc:     "Response headers added beside the backend's values of the same header (after customResponseHeaders): `headers.addResponseHeaders.Link=</style.css>; rel=preload`.",
			Example: "Link: </style.css>; rel=preload", rw: headerMap(func(h *Headers) *map[string]string { return &h.ResponseAdd })},
		{Label: "headers.frameDeny", JSON: "config.headers.frame_deny", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "Adds `X-Frame-Options: DENY` to responses (RFC 7034): no page may frame the route's.",
			Example: "true", rw: headerBool(func(h *Headers) *bool { return &h.FrameDeny })},
		{Label: "headers.contentTypeNosniff", JSON: "config.headers.content_type_nosniff", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "Adds `X-Content-Type-Options: nosniff` to responses: browsers keep to the declared Content-Type.",
			Example: "true", rw: headerBool(func(h *Headers) *bool { return &h.ContentTypeNosniff })},
		{Label: "headers.referrerPolicy", JSON: "config.headers.referrer_policy", Kind: KindString, Default: "(none)", Code: diagnostics.BadHeaders,
			Doc:     "The `Referrer-Policy` of responses: W3C Referrer Policy tokens, comma-separated (the last one the browser knows applies).",
			Example: "strict-origin-when-cross-origin", set: setReferrerPolicy, get: omitEmpty(inHeaders(func(h *Headers) any { return h.ReferrerPolicy }))},
		{Label: "headers.permissionsPolicy", JSON: "config.headers.permissions_policy", Kind: KindString, Default: "(none)", Code: diagnostics.BadHeaders,
			Doc:     "The `Permissions-Policy` of responses, as written.",
			Example: "camera=(), geolocation=()", set: setPermissionsPolicy, get: omitEmpty(inHeaders(func(h *Headers) any { return h.PermissionsPolicy }))},
		// CORS.
		{Label: "cors.allowOrigins", LabelAliases: []string{"headers.accessControlAllowOriginList"}, JSON: "config.cors.allow_origins", Kind: KindList, Default: "(none: CORS off)", Code: diagnostics.BadCORS,
			Doc:     "Origins allowed to read the route's responses cross-origin (`scheme://host[:port]`, or `*`). Setting it turns CORS on: Levee answers preflights (OPTIONS with Access-Control-Request-Method) itself and adds `Access-Control-Allow-Origin` and `Vary: Origin` to the responses of allowed origins.",
			Example: "https://app.example.com,https://admin.example.com", set: setCORSOrigins, get: inCORS(func(c *CORS) any { return c.AllowOrigins })},
		{Label: "cors.allowMethods", LabelAliases: []string{"headers.accessControlAllowMethods"}, JSON: "config.cors.allow_methods", Kind: KindList, Default: "GET,HEAD,POST", Code: diagnostics.BadCORS,
			Doc:     "Methods a preflight allows.",
			Example: "GET,POST,PUT,DELETE", set: setCORSMethods, get: omitEmpty(inCORS(func(c *CORS) any { return c.AllowMethods }))},
		{Label: "cors.allowHeaders", LabelAliases: []string{"headers.accessControlAllowHeaders"}, JSON: "config.cors.allow_headers", Kind: KindList, Default: "(none: the CORS-safelisted ones)", Code: diagnostics.BadCORS,
			Doc:     "Request headers a preflight allows; `*` allows any (not with credentials, per the Fetch standard).",
			Example: "Content-Type,Authorization", rw: corsHeaderList(func(c *CORS) *[]string { return &c.AllowHeaders })},
		{Label: "cors.exposeHeaders", LabelAliases: []string{"headers.accessControlExposeHeaders"}, JSON: "config.cors.expose_headers", Kind: KindList, Default: "(none)", Code: diagnostics.BadCORS,
			Doc:     "Response headers the page's script may read (`Access-Control-Expose-Headers`).",
			Example: "X-Request-Id", rw: corsHeaderList(func(c *CORS) *[]string { return &c.ExposeHeaders })},
		{Label: "cors.allowCredentials", LabelAliases: []string{"headers.accessControlAllowCredentials"}, JSON: "config.cors.allow_credentials", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "Allows credentialed requests (cookies, Authorization). Needs explicit origins: with `*` it is refused (W061).",
			Example: "true", set: setCORSCredentials, get: inCORS(func(c *CORS) any { return c.AllowCredentials })},
		{Label: "cors.maxAge", LabelAliases: []string{"headers.accessControlMaxAge"}, JSON: "config.cors.max_age", Kind: KindDuration, Default: "0s (not sent)", Code: diagnostics.BadCORS,
			Doc:     "How long a browser may cache a preflight's answer (`Access-Control-Max-Age`, whole seconds).",
			Example: "600", set: setCORSMaxAge, get: inCORS(func(c *CORS) any { return c.MaxAge })},
		// Compression.
		{Label: "compress", JSON: "config.compress.enabled", Kind: KindBool, Default: "true once any compress.* field is set", Code: diagnostics.BadBool,
			Doc:     "Compresses responses with the best encoding the client accepts (Accept-Encoding q-values, RFC 9110 12.5.3). Skipped: already-encoded, ranged (206), HEAD, 1xx/204/304 and upgraded responses, excluded content types, and bodies below minResponseBodyBytes. Sets `Vary: Accept-Encoding`, drops Content-Length, weakens the ETag.",
			Example: "true", set: setCompressEnabled, get: inCompress(func(*Compress) any { return true })},
		{Label: "compress.encodings", JSON: "config.compress.encodings", Kind: KindList, Default: "zstd,br,gzip", Code: diagnostics.BadCompress,
			Doc:     "Encodings Levee may use, in order of preference among those the client accepts with the same q-value: `zstd`, `br` (or `brotli`), `gzip`.",
			Example: "br,gzip", set: setCompressEncodings, get: inCompress(func(c *Compress) any { return c.Encodings })},
		{Label: "compress.minResponseBodyBytes", JSON: "config.compress.min_response_body_bytes", Kind: KindInt, Default: strconv.Itoa(DefaultMinResponseBodyBytes), Code: diagnostics.BadCompress,
			Doc:     "Smallest body compressed (0-65536): by Content-Length, or, when the length is unknown, by buffering up to this many bytes first.",
			Example: "512", set: setCompressMin, get: inCompress(func(c *Compress) any { return c.MinResponseBodyBytes })},
		{Label: "compress.excludedContentTypes", JSON: "config.compress.excluded_content_types", Kind: KindList, Default: "(none)", Code: diagnostics.BadCompress,
			Doc:     "Media types never compressed (parameters ignored), besides those that are compressed already (images, video, audio, archives: always skipped).",
			Example: "text/event-stream,application/grpc", set: setCompressExcluded, get: omitEmpty(inCompress(func(c *Compress) any { return c.ExcludedContentTypes }))},
		// Redirects.
		{Label: "redirectScheme.scheme", JSON: "config.redirect_scheme.scheme", Kind: KindEnum, Values: []string{"http", "https"}, Default: "https", Code: diagnostics.BadRedirect,
			Doc:     "Redirects requests that did not arrive with this scheme to it (same host, path and query). Setting any redirectScheme.* field turns the redirect on.",
			Example: "https", set: setRedirectScheme, get: inRedirectScheme(func(r *RedirectScheme) any { return r.Scheme })},
		{Label: "redirectScheme.port", JSON: "config.redirect_scheme.port", Kind: KindInt, Default: "(the scheme's: 80 or 443)", Code: diagnostics.BadRedirect,
			Doc:     "Port of the redirect's target (1-65535); the scheme's default port is left out of the URL.",
			Example: "8443", set: setRedirectSchemePort, get: omitEmpty(inRedirectScheme(func(r *RedirectScheme) any { return r.Port }))},
		{Label: "redirectScheme.permanent", JSON: "config.redirect_scheme.permanent", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "301 (308 for methods other than GET and HEAD, which must be kept) instead of 302 (307).",
			Example: "true", set: setRedirectSchemePermanent, get: omitEmpty(inRedirectScheme(func(r *RedirectScheme) any { return r.Permanent }))},
		{Label: "redirectRegex.regex", JSON: "config.redirect_regex.regex", Kind: KindString, Default: "(none)", Code: diagnostics.BadRedirect,
			Doc:     "A Go (RE2) regular expression matched against the request's full URL (`scheme://host/path?query`); a request that matches is redirected to the replacement.",
			Example: `^http://www\.example\.com/(.*)`, set: setRegex(func(t *Transform) *string { return &t.RedirectRegex.Regex }, (*Transform).redirectRegex), get: inRedirectRegex(func(r *RedirectRegex) any { return r.Regex })},
		{Label: "redirectRegex.replacement", JSON: "config.redirect_regex.replacement", Kind: KindString, Default: "(none)", Code: diagnostics.BadRedirect,
			Doc:     "The redirect's target; `$1` or `${1}` names a group of the regex.",
			Example: "https://example.com/${1}", set: setReplacement(func(t *Transform) *string { return &t.redirectRegex().Replacement }), get: inRedirectRegex(func(r *RedirectRegex) any { return r.Replacement })},
		{Label: "redirectRegex.permanent", JSON: "config.redirect_regex.permanent", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "301 (308) instead of 302 (307), as redirectScheme.permanent.",
			Example: "true", set: setRedirectRegexPermanent, get: omitEmpty(inRedirectRegex(func(r *RedirectRegex) any { return r.Permanent }))},
		// Path rewrites.
		{Label: "replacePath", LabelAliases: []string{"replacePath.path"}, JSON: "config.replace_path", Kind: KindString, Default: "(none)", Code: diagnostics.BadPathRewrite,
			Doc:     "Replaces the whole request path before forwarding; the original goes in `X-Replaced-Path`. Path rewrites run in one order: replacePath or replacePathRegex on the client's path, then stripPrefix (only without them, W067), then addPrefix.",
			Example: "/index.html", set: setReplacePath, get: omitEmpty(value(func(ep *Entrypoint) any { return ep.Transform.ReplacePath }))},
		{Label: "replacePathRegex.regex", JSON: "config.replace_path_regex.regex", Kind: KindString, Default: "(none)", Code: diagnostics.BadPathRewrite,
			Doc:     "A Go (RE2) regular expression matched against the request path as the client sent it (escaped); a match is replaced with the replacement, and the original goes in `X-Replaced-Path`.",
			Example: "^/api/v1/(.*)", set: setRegex(func(t *Transform) *string { return &t.ReplacePathRegex.Regex }, (*Transform).replacePathRegex), get: inReplacePathRegex(func(r *ReplacePathRegex) any { return r.Regex })},
		{Label: "replacePathRegex.replacement", JSON: "config.replace_path_regex.replacement", Kind: KindString, Default: "(none)", Code: diagnostics.BadPathRewrite,
			Doc:     "The new path; `$1` or `${1}` names a group. A result that is not a clean absolute path is answered 400.",
			Example: "/v2/$1", set: setReplacement(func(t *Transform) *string { return &t.replacePathRegex().Replacement }), get: inReplacePathRegex(func(r *ReplacePathRegex) any { return r.Replacement })},
		// Sticky sessions.
		{Label: "sticky.cookie", JSON: "config.sticky.enabled", Kind: KindBool, Default: "true once any sticky.cookie.* field is set", Code: diagnostics.BadBool,
			Doc:     "Keeps a client on one backend with a cookie naming it by an opaque id (not its address). A gone, down or ejected backend falls back to the balancer and the cookie is issued again.",
			Example: "true", set: setStickyEnabled, get: inSticky(func(*Sticky) any { return true })},
		{Label: "sticky.cookie.name", JSON: "config.sticky.cookie_name", Kind: KindString, Default: DefaultStickyCookie, Code: diagnostics.BadSticky,
			Doc:     "Name of the sticky cookie (an RFC 6265 token).",
			Example: "srv_id", set: setStickyName, get: inSticky(func(s *Sticky) any { return s.CookieName })},
		{Label: "sticky.cookie.secure", JSON: "config.sticky.secure", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "Marks the cookie Secure: browsers send it over HTTPS only.",
			Example: "true", rw: stickyBool(func(s *Sticky) *bool { return &s.Secure })},
		{Label: "sticky.cookie.httpOnly", JSON: "config.sticky.http_only", Kind: KindBool, Default: "false", Code: diagnostics.BadBool,
			Doc:     "Marks the cookie HttpOnly: scripts cannot read it.",
			Example: "true", rw: stickyBool(func(s *Sticky) *bool { return &s.HTTPOnly })},
		{Label: "sticky.cookie.sameSite", JSON: "config.sticky.same_site", Kind: KindEnum, Values: []string{SameSiteNone, SameSiteLax, SameSiteStrict}, Default: "(unset)", Code: diagnostics.BadSticky,
			Doc:     "The cookie's SameSite attribute.",
			Example: "lax", set: setStickySameSite, get: omitEmpty(inSticky(func(s *Sticky) any { return s.SameSite }))},
	}
}

// The transform policies' groups in the payload (see group).
var (
	inHeaders          = group(func(ep *Entrypoint) *Headers { return ep.Transform.Headers })
	inCORS             = group(func(ep *Entrypoint) *CORS { return ep.Transform.CORS })
	inCompress         = group(func(ep *Entrypoint) *Compress { return ep.Transform.Compress })
	inRedirectScheme   = group(func(ep *Entrypoint) *RedirectScheme { return ep.Transform.RedirectScheme })
	inRedirectRegex    = group(func(ep *Entrypoint) *RedirectRegex { return ep.Transform.RedirectRegex })
	inReplacePathRegex = group(func(ep *Entrypoint) *ReplacePathRegex { return ep.Transform.ReplacePathRegex })
	inSticky           = group(func(ep *Entrypoint) *Sticky { return ep.Transform.Sticky })
)

// transformJSONGroups are the config paths of the transform policies whose
// value is an object of fields.
func transformJSONGroups() map[string]diagnostics.Code {
	return map[string]diagnostics.Code{
		"config.headers":            diagnostics.BadHeaders,
		"config.cors":               diagnostics.BadCORS,
		"config.compress":           diagnostics.BadCompress,
		"config.redirect_scheme":    diagnostics.BadRedirect,
		"config.redirect_regex":     diagnostics.BadRedirect,
		"config.replace_path_regex": diagnostics.BadPathRewrite,
		"config.sticky":             diagnostics.BadSticky,
		"config.errors":             diagnostics.BadErrorStatus,
	}
}
