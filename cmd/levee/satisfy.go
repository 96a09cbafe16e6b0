package main

import (
	"github.com/levee-proxy/levee/api"
	"github.com/levee-proxy/levee/provider/docker"
	"github.com/levee-proxy/levee/router"
)

// The router is what build wires behind the API and the providers; keep it
// satisfying their interfaces (defined where they are used, so neither
// package imports the router).
var (
	_ api.Router  = (*router.Router)(nil)
	_ api.Sink    = (*router.Router)(nil)
	_ docker.Sink = (*router.Router)(nil)
)
