"""The documents speak of the project as it is: no history, short entry points, links that resolve.

History lives in git: no tracked text file narrates development sessions or earlier versions.
README.md is an entry point and BENCHMARKS.md holds today's figures, both short; every relative
Markdown link in them and in docs/ names a file that exists.
"""

import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
THIS = pathlib.Path(__file__).resolve()
SUFFIXES = ('.md', '.py', '.c', '.yaml', '.txt', '.msg', '.srv', '.launch.py')
# Walked when git cannot list the tracked files (an installed or exported copy).
FALLBACK = ('README.md', 'BENCHMARKS.md', 'docs', 'working_memory', 'launch', 'config', 'msg',
            'srv')
ORDINALS = ('first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|'
            'thirteenth|fourteenth|fifteenth|sixteenth|seventeenth')
HISTORY = [re.compile(pattern, re.IGNORECASE) for pattern in (
    rf'\b({ORDINALS}|\d+(st|nd|rd|th))\s+session\b',
    r'\bsession\s+\d+\b',
    r'\btried,? (and )?not kept\b',
    r'\bin an older version\b',
    r"\bissue \d+'s targets\b",
)]
README_MAX_LINES = 260
BENCHMARKS_MAX_LINES = 320
LINK = re.compile(r'\]\(([^)\s]+)\)')
FENCE = re.compile(r'^(```|~~~).*?^\1', re.MULTILINE | re.DOTALL)


def _text_file(path: pathlib.Path) -> bool:
    return path.name.endswith(SUFFIXES)


def tracked_text_files() -> list[pathlib.Path]:
    """Return the text files git tracks in the repository, else those of the FALLBACK folders."""
    if (ROOT / '.git').exists():
        try:
            listed = subprocess.run(['git', 'ls-files', '-z'], cwd=ROOT, capture_output=True,
                                    check=True, timeout=60).stdout.decode()
        except (OSError, subprocess.SubprocessError):
            listed = None
        if listed is not None:
            return sorted(ROOT / name for name in listed.split('\0')
                          if name and _text_file(ROOT / name) and (ROOT / name).is_file())
    found = []
    for name in FALLBACK:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [p for p in path.rglob('*') if p.is_file() and _text_file(p)]
    return sorted(found)


def history_lines(path: pathlib.Path) -> list[str]:
    """Return 'file:line: matched text' for each line of `path` that narrates history."""
    try:
        text = path.read_text(encoding='utf-8')
    except (OSError, UnicodeDecodeError):
        return []
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        for pattern in HISTORY:
            match = pattern.search(line)
            if match:
                found.append(f'{path.relative_to(ROOT)}:{number}: {match.group(0)}')
    return found


def documents() -> list[pathlib.Path]:
    """Return README.md, BENCHMARKS.md and the Markdown pages of docs/."""
    return [ROOT / 'README.md', ROOT / 'BENCHMARKS.md', *sorted((ROOT / 'docs').glob('*.md'))]


def broken_links(path: pathlib.Path) -> list[str]:
    """Return 'file: link' for each relative Markdown link of `path` that names no file."""
    text = FENCE.sub('', path.read_text(encoding='utf-8'))
    broken = []
    for target in LINK.findall(text):
        if re.match(r'^[a-z][a-z0-9+.-]*:', target, re.IGNORECASE) or target.startswith('#'):
            continue   # http(s), mailto and other schemes, or an anchor on the same page
        file_part = target.split('#', 1)[0]
        if not (path.parent / file_part).exists():
            broken.append(f'{path.relative_to(ROOT)}: {target}')
    return broken


def test_no_tracked_text_file_narrates_development_history():
    files = [path for path in tracked_text_files() if path.resolve() != THIS]
    assert files, f'no text files found under {ROOT}'
    found = [line for path in files for line in history_lines(path)]
    assert not found, 'history narration (history lives in git):\n' + '\n'.join(found)


def test_readme_and_benchmarks_stay_short():
    readme = (ROOT / 'README.md').read_text(encoding='utf-8').count('\n')
    benchmarks = (ROOT / 'BENCHMARKS.md').read_text(encoding='utf-8').count('\n')
    assert readme <= README_MAX_LINES, f'README.md has {readme} lines (at most {README_MAX_LINES})'
    assert benchmarks <= BENCHMARKS_MAX_LINES, \
        f'BENCHMARKS.md has {benchmarks} lines (at most {BENCHMARKS_MAX_LINES})'


@pytest.mark.parametrize('path', documents(), ids=lambda path: str(path.relative_to(ROOT)))
def test_every_relative_link_of_a_document_names_a_file(path):
    assert path.is_file(), f'{path.relative_to(ROOT)} is missing'
    broken = broken_links(path)
    assert not broken, 'links to no file:\n' + '\n'.join(broken)
