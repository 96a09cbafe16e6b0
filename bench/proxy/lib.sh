# Sourced by every script here (run.sh, profile.sh, instructions.sh,
# idle.sh, tls.sh, https.sh, tcp.sh, h3.sh, grpc.sh, writes.sh): what they
# share.

# PIDS lists the processes a script started; stop_started stops them (the
# scripts call it on EXIT). Bounded: each gets 5 s after SIGTERM, then
# SIGKILL.
PIDS=()
stop_started() {
	local pid
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	done
}

# bench_start TAG: the start a benchmark script shares: TMP (a fresh
# directory /tmp/levee-TAG.XXXXXX), log (messages to stderr, tagged
# [TAG]), LOAD_PID (the load generator running now, "" when none) and the
# EXIT trap that kills that load, stops every process in PIDS and removes
# TMP.
bench_start() {
	BENCH_TAG=$1
	TMP=$(mktemp -d "/tmp/levee-$1.XXXXXX")
	LOAD_PID=""
	trap bench_cleanup EXIT
}
bench_cleanup() {
	[ -z "${LOAD_PID:-}" ] || kill "$LOAD_PID" 2>/dev/null || true
	stop_started
	[ -z "${TMP:-}" ] || rm -rf "$TMP"
}
log() { echo "[${BENCH_TAG:-bench}] $*" >&2; }

# install_missing PKG...: apt-get installs the Debian packages named (none:
# nothing to do), through sudo when not root. nginx-light is gone from newer
# Debian releases: when the install fails, it is tried again with nginx in
# its place. With NO_INSTALL set it fails instead, naming what is missing.
install_missing() {
	[ $# -gt 0 ] || return 0
	if [ -n "${NO_INSTALL:-}" ]; then
		log "missing: $* (NO_INSTALL is set)"
		exit 1
	fi
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	log "installing $*"
	$sudo apt-get update -qq
	if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null; then
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${@/nginx-light/nginx}" >/dev/null
	fi
}

# build_levee [SRC [OUT]]: a static levee binary from the checkout at SRC
# (default $ROOT) as OUT (default $TMP/levee).
build_levee() {
	local src=${1:-$ROOT} out=${2:-$TMP/levee}
	(cd "$src" && CGO_ENABLED=0 go build -trimpath -o "$out" ./cmd/levee)
}

# build_tools NAME...: each bench/proxy/NAME (backend, h3load, ...) as a
# static binary $TMP/NAME.
build_tools() {
	local n
	for n in "$@"; do
		(cd "$ROOT/bench" && CGO_ENABLED=0 go build -trimpath -o "$TMP/$n" "./proxy/$n") || return
	done
}

# wait_tcp PORT: poll until something accepts on 127.0.0.1:PORT, at most 10 s.
wait_tcp() {
	for _ in $(seq 100); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	log "timed out waiting for 127.0.0.1:$1"
	return 1
}

# wait_http URL [Host]: poll until URL answers 2xx (any certificate), at
# most 10 s.
wait_http() {
	local url=$1 host=${2:-bench.local}
	for _ in $(seq 100); do
		curl -kfsS -o /dev/null -H "Host: $host" "$url" 2>/dev/null && return 0
		sleep 0.1
	done
	log "timed out waiting for $url (Host: $host)"
	return 1
}

# make_cert DIR NAME...: a self-signed ECDSA P-256 certificate for the
# names (the first is its CN), DIR/NAME.crt and DIR/NAME.key; sets CERT and
# KEY to their paths.
make_cert() {
	local dir=$1 san="" n
	shift
	for n in "$@"; do san="$san${san:+,}DNS:$n"; done
	mkdir -p "$dir"
	CERT=$dir/$1.crt KEY=$dir/$1.key
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
		-subj "/CN=$1" -addext "subjectAltName=$san" -keyout "$KEY" -out "$CERT" 2>/dev/null
}

# Results files: one run a line, tab-separated: test, target, round, then
# the run's figures (field 1 is the fourth column).
#
# results_median FILE TEST TARGET FIELD: the median of FIELD over TARGET's
# rounds of TEST.
results_median() {
	awk -F'\t' -v s="$2" -v t="$3" -v c="$4" '$1 == s && $2 == t {print $(c + 3)}' "$1" |
		sort -g | awk '{a[NR] = $1} END {if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# results_ratio FILE TEST TARGET PEER FIELD: TARGET's FIELD over PEER's
# within each round of TEST, then the median over the rounds, and each
# round's ratio in parentheses: "0.93 (0.91 0.93 0.95)". On a shared host
# the speed drifts between rounds more than between two neighbouring runs,
# so the in-round ratio is the figure to read.
results_ratio() {
	awk -F'\t' -v s="$2" -v t="$3" -v p="$4" -v c="$5" '
		$1 == s && $2 == p {h[$3] = $(c + 3)}
		$1 == s && $2 == t {v[$3] = $(c + 3)}
		END {
			n = 0; list = ""
			for (k = 1; k <= 1000; k++) if ((k in v) && (k in h) && h[k] > 0) {
				n++; a[n] = v[k] / h[k]; list = list sprintf("%s%.2f", (list == "" ? "" : " "), v[k] / h[k])
			}
			for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j > 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
			m = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			printf "%.2f (%s)", m, list
		}' "$1"
}

# nginx's benchmark configuration, the same for run.sh and instructions.sh.
#
# write_nginx_conf DIR LISTEN BACKEND [CONNS [EXTRA]]: DIR/nginx.conf for one
# process (no master, one worker) listening on LISTEN (host:port) and
# proxying with keep-alive to BACKEND (host:port), setting the forwarding
# headers Levee and HAProxy set; pid, logs and temp paths under DIR; at
# most CONNS connections (default 4096). EXTRA is more of the http block
# (nginx_tls_server, nginx_gzip_server), after the plain server.
write_nginx_conf() {
	local dir=$1 listen=$2 backend=$3 conns=${4:-4096} extra=${5:-}
	mkdir -p "$dir"
	cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections $conns; }
worker_rlimit_nofile $((conns * 2 + 64));
http {
    access_log off;
    client_body_temp_path $dir/body;
    proxy_temp_path $dir/proxy;
    fastcgi_temp_path $dir/fastcgi;
    uwsgi_temp_path $dir/uwsgi;
    scgi_temp_path $dir/scgi;
    keepalive_requests 1000000;
    keepalive_timeout ${NGINX_KEEPALIVE_TIMEOUT:-75s};
    upstream backend {
        server $backend;
        keepalive 128;
        keepalive_requests 1000000;
    }
    server {
        listen $listen;
        server_name bench.local;
$(nginx_proxy_location backend)
    }
${extra}}
EOF
}

# nginx_proxy_location UPSTREAM: the location block every nginx server of
# the benchmark uses: keep-alive to the upstream, the forwarding headers.
nginx_proxy_location() {
	cat <<EOF
        location / {
            proxy_pass http://$1;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Forwarded-Host \$host;
        }
EOF
}

# nginx_tls_server LISTEN CERT KEY: a server block for write_nginx_conf's
# EXTRA: TLS (and HTTP/2 by ALPN) on LISTEN with CERT and KEY, proxying to
# the upstream "backend" like the plain server. The TLS policy is Levee's
# (docs/tls.md): TLS 1.2 and 1.3, the TLS 1.2 ECDHE AEAD suites in Go's
# order; session tickets on (nginx's default, and the only resumption Go's
# server and client do); no shared session cache (Levee has none either).
nginx_tls_server() {
	local listen=$1 cert=$2 key=$3
	cat <<EOF
    server {
        listen $listen ssl http2;
        server_name bench.local;
        ssl_certificate $cert;
        ssl_certificate_key $key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305;
        ssl_prefer_server_ciphers on;
        ssl_session_tickets on;
$(nginx_proxy_location backend)
    }
EOF
}

# nginx_gzip_server LISTEN BACKEND LEVEL: an upstream "json" to BACKEND and a
# plain server block on LISTEN proxying to it with gzip at LEVEL (Levee's
# gzip level is 5) for every type and every proxied request, Vary on, as
# Levee's compress=true does; for write_nginx_conf's EXTRA.
nginx_gzip_server() {
	local listen=$1 backend=$2 level=$3
	cat <<EOF
    upstream json {
        server $backend;
        keepalive 128;
        keepalive_requests 1000000;
    }
    server {
        listen $listen;
        server_name gzip.local;
        gzip on;
        gzip_comp_level $level;
        gzip_min_length 1024;
        gzip_types *;
        gzip_proxied any;
        gzip_vary on;
$(nginx_proxy_location json)
    }
EOF
}
