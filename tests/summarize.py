"""Add up the closing lines of every test stage's log into one summary line. A stage that
could not run here (its log says "skipped: <reason>") counts as one skipped test.

Printed, in this order: each stage's counts; the tests that were skipped, one line per stage and
reason (test.sh runs pytest with -rs, and the C harness prints "skipped NAME: reason", so every
reason is in the log: the farm tests' missing redis-server and the command that installs it,
say); one line per skipped stage with its reason and the command that enables it ("c-windows
skipped: no x86_64-w64-mingw32-gcc/wine (apt-get install ...)"); and last the closing line
"tests: N passed, N failed, N skipped", which CI reads.
"""

import re
import sys
from pathlib import Path

SKIPPED_STAGE = re.compile(r"^skipped: (\S.*)$")
PLAIN = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")
PYTEST_PART = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")
# pytest -rs: "SKIPPED [3] tests/python/test_farm.py:23: skipped: no redis-server (...)"
PYTEST_SKIP = re.compile(r"^SKIPPED \[(\d+)\] [^:\s]+(?::\d+)?: (.*)$")
# the C harness: "skipped test_name: reason" (after "N: ", the test's number, under ctest -V)
C_SKIP = re.compile(r"^(?:\d+: )?skipped [^\s:]+: (.*)$")


def count(log: str) -> tuple[int, int, int]:
    passed = failed = skipped = 0
    for line in log.splitlines():
        if SKIPPED_STAGE.match(line):
            skipped += 1
            continue
        if PYTEST_SKIP.match(line):
            continue
        m = PLAIN.match(line.strip())
        if m:
            passed += int(m[1])
            failed += int(m[2])
            skipped += int(m[3] or 0)
            continue
        if re.search(r"\d+ (passed|failed|error|skipped)", line) and " in " in line and "=" not in line[:1]:
            parts = dict((kind, int(n)) for n, kind in PYTEST_PART.findall(line))
            passed += parts.get("passed", 0) + parts.get("xfailed", 0)
            failed += parts.get("failed", 0) + parts.get("error", 0) + parts.get("errors", 0)
            skipped += parts.get("skipped", 0)
    return passed, failed, skipped


def skips(log: str) -> tuple[str | None, dict[str, int]]:
    """The stage's own skip reason (None when it ran) and its skipped tests: reason -> count."""
    stage_reason = None
    tests: dict[str, int] = {}
    for line in log.splitlines():
        m = SKIPPED_STAGE.match(line)
        if m and stage_reason is None:
            stage_reason = m[1].strip()
            continue
        m = PYTEST_SKIP.match(line.strip())
        n, reason = (int(m[1]), m[2].strip()) if m else (1, None)
        if reason is None:
            m = C_SKIP.match(line.strip())
            reason = m[1].strip() if m else None
        if reason:
            reason = reason[len("skipped: "):] if reason.startswith("skipped: ") else reason
            tests[reason] = tests.get(reason, 0) + n
    return stage_reason, tests


def summary(logs: dict[str, str]) -> list[str]:
    """The lines printed for these logs (stage name -> log text), closing line last."""
    lines, test_skips, stage_skips = [], [], []
    total = [0, 0, 0]
    for name, text in logs.items():
        p, f, s = count(text)
        lines.append(f"  {name}: {p} passed, {f} failed, {s} skipped")
        total = [total[0] + p, total[1] + f, total[2] + s]
        stage_reason, tests = skips(text)
        if stage_reason is not None:
            stage_skips.append(f"{name} skipped: {stage_reason}")
        for reason, n in tests.items():
            test_skips.append(f"{name}: {n} test{'s' if n != 1 else ''} skipped: {reason}")
    lines += test_skips + stage_skips
    lines.append(f"tests: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return lines


def main() -> int:
    logs = {log.stem: log.read_text(errors="replace") for log in sorted(Path(sys.argv[1]).glob("*.log"))}
    print("\n".join(summary(logs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
