# Sourced by run.sh, profile.sh, instructions.sh, idle.sh and tls.sh: what
# they share.

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
