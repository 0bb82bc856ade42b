#!/bin/sh
# test_tls.sh DIR: a CA of its own (DIR/ca.pem) and a server certificate for 127.0.0.1 signed by it
# (DIR/s.pem, DIR/s.key), for scripts that run a wss:// server (tests/bench/idle.sh,
# tests/integration/opamp/measure.sh). P-256 keys, valid for two days.
set -eu
cd "$1"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
    -days 2 -subj /CN=ca -addext basicConstraints=critical,CA:TRUE 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout s.key -out s.csr \
    -subj /CN=s 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' > s.ext
openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out s.pem -days 2 \
    -extfile s.ext 2>/dev/null
