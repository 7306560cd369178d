"""The repository speaks in its own terms: no tracked text file names a path of somebody's
machine, and none cites a document that is not in the repository (a numbered issue, a research
note, a review, "the spec"). A newcomer reading a comment must be able to follow it here."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

MACHINE_PATH = re.compile(r"(/work/|/root/|/home/[A-Za-z_]|/Users/[A-Za-z_]|[A-Za-z]:\\\\?Users\\\\?)")
OUTSIDE_DOC = re.compile(r"(\bresearch/|\breview-20\d\d|\bissue \d+\b|\(issue \d+\)|\boriginal spec\b|\bthe spec's\b|\bseed/000_)",
                         re.IGNORECASE)

# Files that must name such a string, and why.
ALLOWED = {
    # the patterns themselves
    "tests/python/test_repository_words.py": "holds the patterns",
    "tests/python/test_release_pack.py": "holds the machine-path pattern it checks the pack with",
    # a planted secret path that the redaction test proves never reaches a response
    "tests/python/test_web_api.py": "plants /home/user/private as a secret the API must not echo",
    "tests/python/test_api_redaction.py": "feeds the redaction real-looking Windows paths to hide",
}


def tracked_text_files():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in out.decode().split("\0"):
        if not name or name in ALLOWED:
            continue
        path = ROOT / name
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary: safetensors fixtures, PNG plots
        yield name, data.decode("utf-8", errors="replace")


def offending_lines(pattern):
    found = []
    for name, text in tracked_text_files():
        for number, line in enumerate(text.splitlines(), 1):
            match = pattern.search(line)
            if match:
                found.append(f"{name}:{number}: {match.group()!r}")
    return found


def test_no_file_names_a_machine_path():
    found = offending_lines(MACHINE_PATH)
    assert not found, "machine paths in tracked files (write a placeholder such as /path/to/ComfyUI):\n" + "\n".join(found)


def test_no_file_cites_a_document_outside_the_repository():
    found = offending_lines(OUTSIDE_DOC)
    assert not found, ("references to documents that are not in the repository (say what the code does "
                       "and why instead):\n" + "\n".join(found))


def test_the_patterns_catch_what_they_are_for():
    assert MACHINE_PATH.search("cd /work/main && make")
    assert MACHINE_PATH.search(r"C:\Users\ana\ComfyUI")
    assert not MACHINE_PATH.search("COMFYUI_PATH=/path/to/ComfyUI")
    assert OUTSIDE_DOC.search("as research/comfyui-internals.md explains")
    assert OUTSIDE_DOC.search("the title (issue 14)")
    assert not OUTSIDE_DOC.search("the XXH3 specification fixes these offsets")
