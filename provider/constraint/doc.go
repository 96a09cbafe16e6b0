// Package constraint parses and evaluates the label expressions that
// choose which containers and Swarm services Levee routes
// (`levee serve --docker-constraints`), as Traefik's
// providers.docker.constraints does.
//
// The language, in full:
//
//	expr    = or
//	or      = and { "||" and }
//	and     = unary { "&&" unary }
//	unary   = "!" unary | "(" expr ")" | call
//	call    = "Label" "(" string "," string ")"
//	        | "LabelRegex" "(" string "," string ")"
//	string  = "\"" Go-escaped characters "\"" | "`" raw characters "`"
//
// Label(k, v) holds when the object has label k with value v exactly.
// LabelRegex(k, re) holds when it has label k and re (Go's RE2 syntax)
// matches somewhere in its value, as in Traefik: anchor it (^…$) for the
// whole value. Label keys are compared exactly. && binds tighter than ||;
// ! tighter than both. Spaces between tokens are ignored.
//
// A parse error is a *SyntaxError naming the byte offset (from 1) where
// the expression stops making sense; an empty expression is an error too
// (the flag left out routes everything). Evaluation is a walk of the
// parsed tree: no allocation, no backtracking beyond RE2's.
package constraint
