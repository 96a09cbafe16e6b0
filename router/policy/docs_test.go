package policy

import (
	"os"
	"strings"
	"testing"
)

// Every refusal reason is an X-Levee-Diagnostic value with its row in
// docs/operations.md ("When Levee answers itself").
func TestOperationsDocListsEveryReason(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{ReasonUnauthorized, ReasonForbiddenIP, ReasonRateLimited, ReasonTooManyInFlight, ReasonAuthUnavailable, ReasonAuthThrottled, ReasonAuthBusy, ReasonPolicyMisconfigured} {
		if !strings.Contains(string(doc), "| `"+v+"` |") {
			t.Errorf("docs/operations.md has no row for X-Levee-Diagnostic %q", v)
		}
	}
}
