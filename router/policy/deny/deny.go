// Package deny is the policy of a route whose access policies Levee could
// not read (an unknown key under basicAuth, a misspelled policy name):
// every request is refused with 403 and X-Levee-Diagnostic:
// policy-misconfigured. It runs first, so that nothing of the route is
// reached, and it fails closed: the route is never served without the
// policy the operator meant to give it.
package deny

import (
	"net/http"

	"github.com/levee-proxy/levee/router/policy"
)

// Name is the policy's name in metrics and logs.
const Name = "access-unread"

// Policy refuses every request.
type Policy struct{ ref policy.Refuser }

// New returns the policy for the env's route.
func New(env policy.Env) *Policy { return &Policy{ref: env.Refuser(Name)} }

// Name implements policy.Policy.
func (p *Policy) Name() string { return Name }

// Stage implements policy.Policy: the first stage (the router puts it
// before the stage's other policy, the allow-list).
func (p *Policy) Stage() policy.Stage { return policy.StageIPAllowList }

// Serve implements policy.Policy.
func (p *Policy) Serve(w http.ResponseWriter, _ *http.Request, _ http.Handler) {
	p.ref.Refuse(w, http.StatusForbidden, policy.ReasonPolicyMisconfigured, "access policy misconfigured\n")
}
