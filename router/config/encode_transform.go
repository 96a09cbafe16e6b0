package config

import "maps"

// wireTransform is the transform policies' part of the payload's config
// object (embedded in wireConfig, so its groups sit beside the others).
type wireTransform struct {
	Headers          *wireHeaders      `json:"headers,omitempty"`
	CORS             *wireCORS         `json:"cors,omitempty"`
	Compress         *wireCompress     `json:"compress,omitempty"`
	RedirectScheme   *RedirectScheme   `json:"redirect_scheme,omitempty"`
	RedirectRegex    *RedirectRegex    `json:"redirect_regex,omitempty"`
	ReplacePath      string            `json:"replace_path,omitempty"`
	ReplacePathRegex *ReplacePathRegex `json:"replace_path_regex,omitempty"`
	Sticky           *wireSticky       `json:"sticky,omitempty"`
}

type wireHeaders struct {
	Request            map[string]string `json:"custom_request_headers,omitempty"`
	Response           map[string]string `json:"custom_response_headers,omitempty"`
	RequestAdd         map[string]string `json:"add_request_headers,omitempty"`
	ResponseAdd        map[string]string `json:"add_response_headers,omitempty"`
	FrameDeny          bool              `json:"frame_deny"`
	ContentTypeNosniff bool              `json:"content_type_nosniff"`
	ReferrerPolicy     string            `json:"referrer_policy,omitempty"`
	PermissionsPolicy  string            `json:"permissions_policy,omitempty"`
}

type wireCORS struct {
	AllowOrigins     []string `json:"allow_origins"`
	AllowMethods     []string `json:"allow_methods,omitempty"`
	AllowHeaders     []string `json:"allow_headers,omitempty"`
	ExposeHeaders    []string `json:"expose_headers,omitempty"`
	AllowCredentials bool     `json:"allow_credentials"`
	MaxAge           string   `json:"max_age"`
}

type wireCompress struct {
	Enabled              bool     `json:"enabled"`
	Encodings            []string `json:"encodings"`
	MinResponseBodyBytes int      `json:"min_response_body_bytes"`
	ExcludedContentTypes []string `json:"excluded_content_types,omitempty"`
}

type wireSticky struct {
	Enabled    bool   `json:"enabled"`
	CookieName string `json:"cookie_name"`
	Secure     bool   `json:"secure"`
	HTTPOnly   bool   `json:"http_only"`
	SameSite   string `json:"same_site,omitempty"`
}

// encodeTransform renders t in the payload's shape; DecodeEntrypoint
// reads it back to t.
func encodeTransform(t Transform) wireTransform {
	w := wireTransform{RedirectScheme: t.RedirectScheme, RedirectRegex: t.RedirectRegex,
		ReplacePath: t.ReplacePath, ReplacePathRegex: t.ReplacePathRegex}
	if h := t.Headers; h != nil {
		w.Headers = &wireHeaders{Request: maps.Clone(h.Request), Response: maps.Clone(h.Response),
			RequestAdd: maps.Clone(h.RequestAdd), ResponseAdd: maps.Clone(h.ResponseAdd), FrameDeny: h.FrameDeny,
			ContentTypeNosniff: h.ContentTypeNosniff, ReferrerPolicy: h.ReferrerPolicy, PermissionsPolicy: h.PermissionsPolicy}
	}
	if c := t.CORS; c != nil {
		w.CORS = &wireCORS{AllowOrigins: c.AllowOrigins, AllowMethods: c.AllowMethods, AllowHeaders: c.AllowHeaders,
			ExposeHeaders: c.ExposeHeaders, AllowCredentials: c.AllowCredentials, MaxAge: c.MaxAge.String()}
	}
	if c := t.Compress; c != nil {
		w.Compress = &wireCompress{Enabled: true, Encodings: c.Encodings, MinResponseBodyBytes: c.MinResponseBodyBytes,
			ExcludedContentTypes: c.ExcludedContentTypes}
	}
	if s := t.Sticky; s != nil {
		w.Sticky = &wireSticky{Enabled: true, CookieName: s.CookieName, Secure: s.Secure, HTTPOnly: s.HTTPOnly, SameSite: s.SameSite}
	}
	return w
}
