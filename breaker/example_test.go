package breaker_test

import (
	"fmt"
	"time"

	"github.com/levee-proxy/levee/breaker"
)

// The two-step API as a proxy uses it: admit, forward, classify, report.
func Example_twoStep() {
	p, errs := breaker.Params{MinRequests: 4, Cooldown: 30 * time.Second}.Validate()
	fmt.Println("invalid fields:", len(errs))
	b := breaker.NewWithParams("api", p, breaker.Options{})
	b.OnTransition(func(t breaker.Transition) {
		fmt.Println("event:", t.Event(), t.Rule, t.From, "->", t.To)
	})

	for _, status := range []int{200, 502, 503, 500} {
		d := b.Admit()
		if !d.Admitted {
			fmt.Println("503, Retry-After:", d.RetryAfter)
			continue
		}
		d.Token.Report(breaker.Outcome{Result: p.Classify(status)})
	}
	d := b.Admit()
	fmt.Println("admitted:", d.Admitted, "retry after:", d.RetryAfter)
	// Output:
	// invalid fields: 0
	// event: opened error_ratio closed -> open
	// admitted: false retry after: 30s
}

// Validation reports each bad field with the default used instead.
func ExampleParams_Validate() {
	p, errs := breaker.Params{Threshold: 1.5, MinRequests: -1}.Validate()
	for _, e := range errs {
		fmt.Printf("%s=%s: %s (using %s)\n", e.Field, e.Value, e.Reason, e.Default)
	}
	fmt.Println(p.Threshold, p.MinRequests, p.FailureStatuses)
	// Output:
	// threshold=1.5: must be a ratio in (0, 1] (using 0.5)
	// minRequests=-1: must be an integer in 1-100000 (using 20)
	// 0.5 20 500-599
}

// The convenience API.
func ExampleNew() {
	b := breaker.New("payments", 3, time.Minute)
	b.OnStateChange(func(name string, from, to breaker.State) {
		fmt.Println(name, from, "->", to)
	})
	for range 3 {
		if b.CanExecute() {
			b.RecordFailure()
		}
	}
	fmt.Println("can execute:", b.CanExecute())
	// Output:
	// payments closed -> open
	// can execute: false
}
