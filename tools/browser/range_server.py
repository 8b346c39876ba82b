"""A static file server on 127.0.0.1 that answers HTTP Range requests.

Foxglove Studio reads a remote MCAP file in pieces (`Range: bytes=a-b`), which Python's
`http.server` does not answer. Each mount maps a URL prefix to a folder:

    python tools/browser/range_server.py /app/=node_modules/@foxglove/studio-base/assets \
        /bag/=out/delivery_baseline

prints the base URL and serves until interrupted.
"""

import mimetypes
import os
import re
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Types a browser insists on: a module worker or wasm streaming refuses a text/plain answer.
TYPES = {'.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm',
         '.html': 'text/html; charset=utf-8', '.json': 'application/json',
         '.mcap': 'application/octet-stream', '.png': 'image/png', '.ttf': 'font/ttf'}
RANGE = re.compile(r'bytes=(\d*)-(\d*)$')
CHUNK = 1 << 16


class RangeError(ValueError):
    """A Range header this server cannot satisfy (answered 416)."""


def parse_range(header: str, size: int) -> tuple[int, int]:
    """Return the (first, last) byte, inclusive, that a one-part `Range` header asks of `size`.

    Raises RangeError for several parts, a malformed header or a range past the end.
    """
    match = RANGE.match(header.strip())
    if match is None or match.group(1) == match.group(2) == '':
        raise RangeError(f'unsupported range {header!r}')
    first, last = match.groups()
    if first == '':  # a suffix: the last N bytes
        count = int(last)
        if count == 0:
            raise RangeError(f'empty suffix range {header!r}')
        return max(size - count, 0), size - 1
    first = int(first)
    last = size - 1 if last == '' else min(int(last), size - 1)
    if first >= size or last < first:
        raise RangeError(f'range {header!r} outside {size} bytes')
    return first, last


def resolve(mounts: dict[str, Path], url_path: str) -> Path | None:
    """Return the file `url_path` names under the longest matching mount, None if none."""
    path = unquote(urlsplit(url_path).path)
    for prefix in sorted(mounts, key=len, reverse=True):
        if not path.startswith(prefix):
            continue
        root = mounts[prefix].resolve()
        target = (root / path[len(prefix):]).resolve()
        if target != root and root not in target.parents:
            return None  # '..' out of the mount
        return target if target.is_file() else None
    return None


def content_type(path: Path) -> str:
    """Return the Content-Type of `path`."""
    return TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or \
        'application/octet-stream'


class RangeHandler(BaseHTTPRequestHandler):
    """GET and HEAD of the server's mounts, whole or one byte range."""

    server: 'RangeServer'

    def do_HEAD(self):  # noqa: N802 (the name http.server calls)
        self._answer(body=False)

    def do_GET(self):  # noqa: N802
        self._answer(body=True)

    def log_request(self, code='-', size='-'):
        self.server.requests.append((self.requestline, int(code)))

    def log_message(self, format, *args):  # noqa: A002 (http.server's signature)
        pass  # the requests and their statuses are in `server.requests`

    def _answer(self, body: bool):
        path = resolve(self.server.mounts, self.path)
        if path is None:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        size = path.stat().st_size
        first, last, status = 0, size - 1, HTTPStatus.OK
        if 'Range' in self.headers:
            try:
                first, last = parse_range(self.headers['Range'], size)
            except RangeError as error:
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, str(error))
                self.send_header('Content-Range', f'bytes */{size}')
                self.send_header('Content-Length', '0')
                self.end_headers()
                return
            status = HTTPStatus.PARTIAL_CONTENT
        self.send_response(status)
        self.send_header('Content-Type', content_type(path))
        self.send_header('Accept-Ranges', 'bytes')
        self.send_header('Cache-Control', 'no-store')
        self.send_header('Content-Length', str(last - first + 1))
        if status == HTTPStatus.PARTIAL_CONTENT:
            self.send_header('Content-Range', f'bytes {first}-{last}/{size}')
        self.end_headers()
        if body:
            with path.open('rb') as file:
                file.seek(first)
                self._copy(file, last - first + 1)

    def _copy(self, file, count: int):
        try:
            while count > 0:
                chunk = file.read(min(CHUNK, count))
                if not chunk:
                    break
                self.wfile.write(chunk)
                count -= len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser cancelled a read it no longer needs


class RangeServer(ThreadingHTTPServer):
    """The server, bound to 127.0.0.1 only; `mounts` maps URL prefixes to folders."""

    daemon_threads = True

    def __init__(self, mounts: dict[str, os.PathLike], port: int = 0):
        for prefix in mounts:
            if not (prefix.startswith('/') and prefix.endswith('/')):
                raise ValueError(f'a mount prefix starts and ends with "/": {prefix!r}')
        self.mounts = {prefix: Path(folder) for prefix, folder in mounts.items()}
        self.requests: list[tuple[str, int]] = []  # (request line, status)
        super().__init__(('127.0.0.1', port), RangeHandler)

    @property
    def url(self) -> str:
        """The base URL, http://127.0.0.1:<port>."""
        return f'http://127.0.0.1:{self.server_address[1]}'

    def __enter__(self):
        threading.Thread(target=self.serve_forever, name='range_server', daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.shutdown()
        self.server_close()


def main(argv: list[str]) -> int:
    mounts = dict(arg.split('=', 1) for arg in argv)
    with RangeServer(mounts) as server:
        print(server.url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
