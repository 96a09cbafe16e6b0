package main

import (
	"fmt"
	"io"

	"github.com/levee-proxy/levee/provider/constraint"
	"github.com/levee-proxy/levee/provider/labels"
)

// dockerConstraintsUsage is --docker-constraints' help, shared by serve and
// validate.
const dockerConstraintsUsage = `route only the containers and Swarm services whose labels satisfy this expression, e.g. 'Label("com.docker.compose.project","shop")'; Label(k,v), LabelRegex(k,re), &&, ||, !, parentheses (docs/getting-started.md, "Only your own containers")`

// constraintFlag is --docker-constraints: parsed when given, so that a bad
// expression stops start-up with the position of the mistake.
type constraintFlag struct{ e **constraint.Expr }

func (f constraintFlag) String() string {
	if f.e == nil {
		return ""
	}
	return (*f.e).String()
}

func (f constraintFlag) Set(s string) error {
	e, err := constraint.Parse(s)
	if err != nil {
		return err
	}
	*f.e = e
	return nil
}

// constrained keeps the containers and services of objs that satisfy e,
// as serve would route them, and notes on stderr how many it left out.
func constrained(objs composeObjects, e *constraint.Expr, stderr io.Writer) composeObjects {
	if e == nil {
		return objs
	}
	left := 0
	keep := func(cs []labels.Container) []labels.Container {
		var out []labels.Container
		for _, c := range cs {
			if e.Match(c.Labels) {
				out = append(out, c)
			} else {
				left++
			}
		}
		return out
	}
	objs.containers, objs.services = keep(objs.containers), keep(objs.services)
	if left > 0 {
		fmt.Fprintf(stderr, "levee validate: note: %d containers or services left out by --docker-constraints %s\n", left, e)
	}
	return objs
}
