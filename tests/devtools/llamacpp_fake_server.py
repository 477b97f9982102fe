"""A stand-in for `python -m llama_cpp.server`: a real HTTP server on 127.0.0.1 whose start-up can misbehave.

Takes the llama_cpp.server flags it is given (and records them), plus test knobs:
--delay S (answer only after S seconds), --never-answer, --exit-code N (die at once), --child-pid-file F (spawn a
sleeping child in the same process group), --ignore-sigterm, --pid-file F, --argv-file F.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="")
    parser.add_argument("--model_alias", default="fake")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--n_ctx", type=int, default=0)
    parser.add_argument("--logits_all", default="true")
    parser.add_argument("--flash_attn", default="false")
    parser.add_argument("--n_threads", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0)
    parser.add_argument("--never-answer", action="store_true")
    parser.add_argument("--exit-code", type=int, default=None)
    parser.add_argument("--child-pid-file", default="")
    parser.add_argument("--ignore-sigterm", action="store_true")
    parser.add_argument("--pid-file", default="")
    parser.add_argument("--argv-file", default="")
    args = parser.parse_args()

    print(f"fake llama server starting for model {args.model}", flush=True)
    if args.pid_file:
        with open(args.pid_file, "w") as handle:
            handle.write(str(os.getpid()))
    if args.argv_file:
        with open(args.argv_file, "w") as handle:
            json.dump(sys.argv[1:], handle)
    if args.exit_code is not None:
        print("fatal: cannot load model (fake)", flush=True)
        sys.exit(args.exit_code)
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.child_pid_file:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        with open(args.child_pid_file, "w") as handle:
            handle.write(str(child.pid))

    ready_at = time.monotonic() + args.delay
    alias = args.model_alias

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/v1/models" or args.never_answer or time.monotonic() < ready_at:
                self.send_response(503)
                self.end_headers()
                return
            body = json.dumps({"object": "list", "data": [{"id": alias, "object": "model"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *fmt_args: object) -> None:
            print(format % fmt_args, flush=True)

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
