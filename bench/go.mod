module github.com/levee-proxy/levee/bench

go 1.26.0

require github.com/levee-proxy/levee v0.0.0

require github.com/sony/gobreaker/v2 v2.4.0

replace github.com/levee-proxy/levee => ../
