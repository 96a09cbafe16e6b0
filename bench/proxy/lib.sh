# Sourced by run.sh, profile.sh and instructions.sh: what they share.

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
# write_nginx_conf DIR LISTEN BACKEND [CONNS]: DIR/nginx.conf for one
# process (no master, one worker) listening on LISTEN (host:port) and
# proxying with keep-alive to BACKEND (host:port), setting the forwarding
# headers Levee and HAProxy set; pid, logs and temp paths under DIR; at
# most CONNS connections (default 4096).
write_nginx_conf() {
	local dir=$1 listen=$2 backend=$3 conns=${4:-4096}
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
        location / {
            proxy_pass http://backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host \$host;
            proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto \$scheme;
            proxy_set_header X-Forwarded-Host \$host;
        }
    }
}
EOF
}
