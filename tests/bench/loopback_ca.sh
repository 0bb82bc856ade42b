# Sourced by the benchmarks that serve https on loopback (download.sh, install.sh).
# loopback_ca DIR: a throwaway CA (DIR/ca.pem) and a server certificate for IP 127.0.0.1 signed by
# it (DIR/server.pem, DIR/server.key), so that both contenders verify the server as they would in
# production rather than skipping verification.
loopback_ca() {
    (cd "$1" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key \
            -out ca.pem -days 2 -subj '/CN=bench CA' 2>/dev/null &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key \
            -out server.csr -subj '/CN=127.0.0.1' 2>/dev/null &&
        printf 'subjectAltName=IP:127.0.0.1\n' > server.ext &&
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
            -days 2 -extfile server.ext 2>/dev/null) ||
        { echo "loopback_ca: openssl could not make the test CA in $1" >&2; exit 1; }
}
