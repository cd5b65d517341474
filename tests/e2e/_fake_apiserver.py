# A stand-in kube-apiserver /readyz for the e2e tests: 200, or 500 while FAIL_FILE exists.
# Usage: python3 _fake_apiserver.py HOST PORT FAIL_FILE
import http.server
import os
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


http.server.HTTPServer((host, port), Handler).serve_forever()
