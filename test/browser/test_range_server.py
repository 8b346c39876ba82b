"""The Range server of tools/browser: whole files, byte ranges, refusals (no browser needed)."""

import urllib.error
import urllib.request

import pytest

DATA = bytes(range(256)) * 4  # 1024 bytes


@pytest.fixture
def served(range_server, tmp_path):
    (tmp_path / 'run.mcap').write_bytes(DATA)
    (tmp_path / 'app.wasm').write_bytes(b'\0asm')
    (tmp_path.parent / 'secret.txt').write_text('outside the mount')
    with range_server.RangeServer({'/bag/': tmp_path}) as server:
        yield server


def fetch(url, method='GET', **headers):
    """Return (status, headers, body) of a request; an HTTP error is an answer too."""
    request = urllib.request.Request(url, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def test_the_server_listens_on_loopback_only(served):
    assert served.server_address[0] == '127.0.0.1' and served.url.startswith('http://127.0.0.1:')


def test_a_whole_file_says_it_answers_ranges(served):
    status, headers, body = fetch(f'{served.url}/bag/run.mcap')
    assert status == 200 and body == DATA
    assert headers['Accept-Ranges'] == 'bytes' and headers['Content-Length'] == '1024'


@pytest.mark.parametrize('header, first, last', [
    ('bytes=0-15', 0, 15), ('bytes=1000-', 1000, 1023), ('bytes=-24', 1000, 1023),
    ('bytes=1000-5000', 1000, 1023), ('bytes=-5000', 0, 1023)])
def test_a_range_gets_its_bytes_and_content_range(served, header, first, last):
    status, headers, body = fetch(f'{served.url}/bag/run.mcap', Range=header)
    assert status == 206 and body == DATA[first:last + 1]
    assert headers['Content-Range'] == f'bytes {first}-{last}/1024'
    assert served.requests[-1] == ('GET /bag/run.mcap HTTP/1.1', 206)


@pytest.mark.parametrize('header', ['bytes=1024-', 'bytes=5-2', 'bytes=-0', 'bytes=0-1,4-5',
                                    'lines=1-2', 'bytes=-'])
def test_a_range_it_cannot_satisfy_is_refused_with_416(served, header):
    status, headers, body = fetch(f'{served.url}/bag/run.mcap', Range=header)
    assert status == 416 and body == b''
    assert headers['Content-Range'] == 'bytes */1024'


def test_head_tells_the_size_without_a_body(served):
    status, headers, body = fetch(f'{served.url}/bag/run.mcap', method='HEAD')
    assert status == 200 and headers['Content-Length'] == '1024' and body == b''


def test_wasm_is_served_as_wasm(served):
    status, headers, _ = fetch(f'{served.url}/bag/app.wasm')
    assert status == 200 and headers['Content-Type'] == 'application/wasm'


@pytest.mark.parametrize('path', ['/bag/none.mcap', '/bag/../secret.txt', '/bag/%2e%2e/secret.txt',
                                  '/other/run.mcap', '/bag/'])
def test_what_is_not_a_file_of_a_mount_is_not_found(served, path):
    status, _, body = fetch(f'{served.url}{path}')
    assert status == 404 and b'outside the mount' not in body


def test_a_mount_prefix_must_be_a_folder_path(range_server, tmp_path):
    with pytest.raises(ValueError, match='starts and ends with'):
        range_server.RangeServer({'/bag': tmp_path})
