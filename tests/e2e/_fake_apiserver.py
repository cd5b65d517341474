# A stand-in kube-apiserver /readyz for the e2e tests: 200, or 500 while FAIL_FILE exists.
# Usage: python3 _fake_apiserver.py HOST PORT FAIL_FILE [CERT_FILE KEY_FILE]
# With CERT_FILE and KEY_FILE it serves HTTPS, as kube-apiserver does.
import http.server
import os
import ssl
import sys

host, port, fail_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        code = 500 if os.path.exists(fail_file) else 200
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"ok\n" if code == 200 else b"failing\n")

    def log_message(self, *args):
        pass


server = http.server.HTTPServer((host, port), Handler)
if len(sys.argv) >= 6:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[4], sys.argv[5])
    server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
