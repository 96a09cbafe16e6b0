package config

import (
	"fmt"
	"slices"

	"github.com/levee-proxy/levee/diagnostics"
)

// finishTransform applies the transform policies' cross-field rules once
// every field is in: the groups turned on or off, the pairs that need both
// halves, CORS credentials, and the one order of path rewrites.
func (d *draft) finishTransform() {
	t := &d.ep.Transform
	if on(d.tr.compressSet || t.Compress != nil, d.tr.compressEnabled) {
		if c := t.compress(); len(c.Encodings) == 0 {
			c.Encodings = slices.Clone(DefaultEncodings)
		}
	} else {
		t.Compress = nil
	}
	if on(d.tr.stickySet || t.Sticky != nil, d.tr.stickyEnabled) {
		if s := t.sticky(); s.SameSite == SameSiteNone && !s.Secure {
			// Browsers drop a SameSite=None cookie that is not Secure
			// (RFC 6265bis 5.4.7): the route would never be sticky.
			g := d.givenOr("sticky.cookie.sameSite", s.SameSite)
			d.add(diagnostics.BadSticky, g.key, g.value, "secure=true",
				"sticky.cookie.sameSite=none needs sticky.cookie.secure=true (browsers drop the cookie otherwise): secure is set", "set "+d.keyOf(fieldByLabel("sticky.cookie.secure"))+"=true")
			s.Secure = true
		}
	} else {
		t.Sticky = nil
	}
	if h := t.Headers; h != nil && len(h.Request) == 0 && len(h.Response) == 0 && len(h.RequestAdd) == 0 && len(h.ResponseAdd) == 0 && !h.FrameDeny &&
		!h.ContentTypeNosniff && h.ReferrerPolicy == "" && h.PermissionsPolicy == "" {
		t.Headers = nil
	}
	d.finishCORS()
	if r := t.RedirectRegex; r != nil && !d.pairComplete("redirectRegex", r.Regex, r.Replacement) {
		t.RedirectRegex = nil
	}
	if r := t.ReplacePathRegex; r != nil && !d.pairComplete("replacePathRegex", r.Regex, r.Replacement) {
		t.ReplacePathRegex = nil
	}
	d.finishRewrites()
	d.finishErrors()
}

// on is whether a group is on: given (any field set) unless turned off
// explicitly, or turned on explicitly.
func on(given bool, explicit *bool) bool {
	if explicit != nil {
		return *explicit
	}
	return given
}

// pairComplete reports whether a regex and its replacement are both set.
// A half that was given but invalid was reported already; a half never
// given is reported here, on the half that was.
func (d *draft) pairComplete(group, regex, replacement string) bool {
	if regex != "" && replacement != "" {
		return true
	}
	missing, present := group+".replacement", group+".regex"
	if regex == "" {
		missing, present = present, missing
	}
	if !d.tr.seen[missing] {
		f := fieldByLabel(present)
		g := d.givenOr(present, "")
		d.add(f.Code, g.key, g.value, "not installed",
			fmt.Sprintf("%s needs %s too: not installed", present, missing), "set "+d.keyOf(fieldByLabel(missing)))
	}
	return false
}

// finishCORS turns CORS off without origins and refuses credentials for
// the wildcard origin: the Fetch standard forbids "*" with credentials, and
// echoing any origin instead would hand every site the user's session.
func (d *draft) finishCORS() {
	c := d.ep.Transform.CORS
	if c == nil {
		return
	}
	if len(c.AllowOrigins) == 0 {
		if _, given := d.given["cors.allowOrigins"]; !given {
			f := fieldByLabel("cors.allowOrigins")
			d.add(f.Code, d.keyOf(f), "", "CORS off", "cors.* fields without cors.allowOrigins: CORS is off", "set "+d.keyOf(f))
		}
		d.ep.Transform.CORS = nil
		return
	}
	if c.AllowCredentials && slices.Contains(c.AllowOrigins, "*") {
		g := d.tr.corsCredentials
		d.add(diagnostics.BadCORS, g.key, g.value, "false",
			"invalid cors.allowCredentials: not with the wildcard origin *", "list the origins explicitly")
		c.AllowCredentials = false
	}
	if len(c.AllowMethods) == 0 {
		c.AllowMethods = []string{"GET", "HEAD", "POST"}
	}
	d.addFindings(corsMethodsFindings(&d.ep))
}

// finishRewrites keeps one rewriting order: replacePath or
// replacePathRegex on the client's path, then stripPrefix, then addPrefix.
// replacePath replaces the whole path, so a regex beside it has nothing to
// match; stripPrefix after either would cut a prefix the rewrite may have
// removed already, so it is dropped (the regex can strip: ^/api(/.*) → $1).
func (d *draft) finishRewrites() {
	t := &d.ep.Transform
	if t.ReplacePath != "" && t.ReplacePathRegex != nil {
		g := d.givenOr("replacePathRegex.regex", t.ReplacePathRegex.Regex)
		d.add(diagnostics.RewriteConflict, g.key, g.value, "not applied",
			"replacePathRegex beside replacePath: replacePath replaces the whole path, the regex is not applied", "keep one of them")
		t.ReplacePathRegex = nil
	}
	if d.ep.StripPrefix && (t.ReplacePath != "" || t.ReplacePathRegex != nil) {
		g := d.givenOr("stripPrefix", "true")
		d.add(diagnostics.RewriteConflict, g.key, g.value, "false",
			"stripPrefix beside replacePath or replacePathRegex: the rewrite works on the client's path, stripPrefix is dropped", "write the strip into the rewrite")
		d.ep.StripPrefix = false
	}
}
