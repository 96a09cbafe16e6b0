package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/levee-proxy/levee/api/store"
	"github.com/levee-proxy/levee/diagnostics"
	"github.com/levee-proxy/levee/router/config"
)

// policyView is one named policy as GET shows it: its canonical payload
// (redacted: no basic-auth hash is ever shown), the source that declared
// the declaration in force, the ids of the routes that reference it,
// whether those routes deny every request because of it, and its
// diagnostics.
type policyView struct {
	Name   string          `json:"name"`
	Source string          `json:"source"`
	Policy json.RawMessage `json:"policy"`
	Routes []string        `json:"routes"`
	// Denies: the policy holds an access setting Levee could not read
	// (an unknown key, or two declarations with different access groups,
	// W039), so every route using it denies (fail closed).
	Denies      bool                     `json:"denies"`
	Diagnostics []diagnostics.Diagnostic `json:"diagnostics"`
}

type policyList struct {
	Policies []policyView `json:"policies"`
}

// usersOf maps each policy name to the ids of the routes that reference
// it, from the router's merged view.
func (s *Server) usersOf() map[string][]string {
	users := map[string][]string{}
	for _, st := range s.router.Entrypoints() {
		for _, name := range st.Entrypoint.Policies {
			if !slices.Contains(users[name], st.Entrypoint.ID) {
				users[name] = append(users[name], st.Entrypoint.ID)
			}
		}
	}
	return users
}

func (s *Server) policyView(p config.Policy, users map[string][]string) (policyView, error) {
	denies := len(p.Access.Unread) > 0
	ep, _ := redactedEntrypoint(config.Entrypoint{Access: p.Access})
	p.Access = ep.Access
	body, err := config.EncodePolicy(p)
	if err != nil {
		return policyView{}, fmt.Errorf("view of policy %q: %w", p.Name, err)
	}
	v := policyView{Name: p.Name, Source: p.Source, Policy: body, Routes: users[p.Name], Denies: denies, Diagnostics: []diagnostics.Diagnostic{}}
	if v.Routes == nil {
		v.Routes = []string{}
	}
	for _, d := range s.router.Diagnostics() {
		if d.Source.Service == "policy "+p.Name {
			v.Diagnostics = append(v.Diagnostics, d)
		}
	}
	return v, nil
}

// listPolicies is GET /policies: every source's policies in force.
func (s *Server) listPolicies(w http.ResponseWriter, _ *http.Request, _ string) {
	users := s.usersOf()
	list := policyList{Policies: []policyView{}}
	for _, p := range s.policiesInForce() {
		v, err := s.policyView(p, users)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err.Error(), nil)
			return
		}
		list.Policies = append(list.Policies, v)
	}
	writeJSON(w, http.StatusOK, list)
}

// policiesInForce are the router's policies, and the store's that the
// router has not merged yet (none once a write has returned).
func (s *Server) policiesInForce() []config.Policy {
	out := s.router.Policies()
	for _, e := range s.store.Policies() {
		if !slices.ContainsFunc(out, func(p config.Policy) bool { return p.Name == e.Policy.Name }) {
			out = append(out, e.Policy)
		}
	}
	slices.SortFunc(out, func(a, b config.Policy) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// getPolicy is GET /policies/{name}.
func (s *Server) getPolicy(w http.ResponseWriter, r *http.Request, _ string) {
	name := r.PathValue("name")
	for _, p := range s.policiesInForce() {
		if p.Name == name {
			v, err := s.policyView(p, s.usersOf())
			if err != nil {
				writeError(w, http.StatusInternalServerError, err.Error(), nil)
				return
			}
			writeJSON(w, http.StatusOK, v)
			return
		}
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("no policy %q", name), nil)
}

// putPolicy is PUT /policies/{name}: creates or replaces an API policy,
// validated as a route's policy groups and stored durably before the
// answer; every route using it changes in the same snapshot.
func (s *Server) putPolicy(w http.ResponseWriter, r *http.Request, who string) {
	mode, ok := readWriteMode(w, r)
	if !ok {
		return
	}
	name := r.PathValue("name")
	if err := config.CheckPolicyName(name); err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error(), nil)
		return
	}
	format, body, ok := readPayload(w, r, "a policy payload")
	if !ok {
		return
	}
	p, ds, err := store.DecodePolicy(format, body)
	if err != nil {
		status, msg, eds := inputFailure(err)
		writeError(w, status, msg, eds)
		return
	}
	if p.Name != name {
		writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("name %q in the body does not match %q in the path", p.Name, name), ds)
		return
	}
	p, ds, err = s.policyWithStoredHashes(p, ds)
	if err != nil {
		writeError(w, http.StatusUnprocessableEntity, err.Error(), ds)
		return
	}
	if refuseStrict(w, mode, ds) {
		return
	}
	put := s.store.PutPolicy
	if mode.dryRun {
		put = s.store.PreviewPolicy
	}
	e, created, err := put(p, ds)
	if err != nil {
		s.log.Error().Err(err).Str("policy", name).Str("who", who).Msg("API policy not stored: state file write failed")
		writeError(w, http.StatusInternalServerError, "not stored: "+err.Error(), ds)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		if !mode.dryRun {
			w.Header().Set("Location", "/policies/"+name)
		}
	}
	s.log.Info().Str("policy", name).Str("who", who).Bool("created", created).Bool("dry_run", mode.dryRun).Int("diagnostics", len(ds)).Msg("API policy stored")
	v, err := s.policyView(e.Policy, s.usersOf())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error(), nil)
		return
	}
	v.Diagnostics = e.Diagnostics
	writeJSON(w, status, v)
}

// deletePolicy is DELETE /policies/{name}: the routes that still use it
// deny from then on (E007).
func (s *Server) deletePolicy(w http.ResponseWriter, r *http.Request, who string) {
	name := r.PathValue("name")
	err := s.store.DeletePolicy(name)
	if errors.Is(err, store.ErrNoPolicy) {
		for _, p := range s.router.Policies() {
			if p.Name == name {
				writeError(w, http.StatusForbidden, fmt.Sprintf("policy %q belongs to source %s; change it there", name, p.Source), nil)
				return
			}
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("no policy %q", name), nil)
		return
	}
	if err != nil {
		s.log.Error().Err(err).Str("policy", name).Str("who", who).Msg("API policy not deleted: state file write failed")
		writeError(w, http.StatusInternalServerError, "not deleted: "+err.Error(), nil)
		return
	}
	s.log.Info().Str("policy", name).Str("who", who).Msg("API policy deleted")
	w.WriteHeader(http.StatusNoContent)
}

// policyWithStoredHashes puts back the stored hash of each basic-auth
// users line that holds the redaction placeholder (a policy read with GET
// and sent back), as a PUT of an entrypoint does, and validates the
// result again so that its diagnostics are those of what is stored.
func (s *Server) policyWithStoredHashes(p config.Policy, ds []diagnostics.Diagnostic) (config.Policy, []diagnostics.Diagnostic, error) {
	ba := p.Access.BasicAuth
	if ba == nil || !slices.ContainsFunc(ba.Users, isRedactedLine) {
		return p, ds, nil
	}
	var stored []string
	if e, ok := s.store.Policy(p.Name); ok && e.Policy.Access.BasicAuth != nil {
		stored = e.Policy.Access.BasicAuth.Users
	}
	c := *ba
	c.Users = slices.Clone(ba.Users)
	for i, line := range c.Users {
		if !isRedactedLine(line) {
			continue
		}
		user, _, _ := strings.Cut(line, ":")
		hash, ok := storedHash(stored, user)
		if !ok {
			return p, ds, fmt.Errorf("basic_auth.users line %q: %s stands for a stored hash, and policy %q stores none for user %q: send the bcrypt hash (htpasswd -nbB name password)",
				line, RedactedHash, p.Name, user)
		}
		c.Users[i] = user + ":" + hash
	}
	p.Access.BasicAuth = &c
	body, err := config.EncodePolicy(p)
	if err != nil {
		return p, ds, err
	}
	return store.DecodePolicy(config.FormatJSON, body)
}
