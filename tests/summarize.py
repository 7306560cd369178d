"""Add up the closing lines of every test stage's log into one summary line. A stage that
could not run here (its log says "skipped: <reason>") counts as one skipped test."""

import re
import sys
from pathlib import Path

SKIPPED_STAGE = re.compile(r"^skipped: \S")
PLAIN = re.compile(r"^(?:\w+: )?(\d+) passed, (\d+) failed(?:, (\d+) skipped)?\s*$")
PYTEST_PART = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed|deselected)")


def count(log: str) -> tuple[int, int, int]:
    passed = failed = skipped = 0
    for line in log.splitlines():
        if SKIPPED_STAGE.match(line):
            skipped += 1
            continue
        m = PLAIN.match(line.strip())
        if m:
            passed += int(m[1])
            failed += int(m[2])
            skipped += int(m[3] or 0)
            continue
        if re.search(r"\d+ (passed|failed|error)", line) and " in " in line and "=" not in line[:1]:
            parts = dict((kind, int(n)) for n, kind in PYTEST_PART.findall(line))
            passed += parts.get("passed", 0) + parts.get("xfailed", 0)
            failed += parts.get("failed", 0) + parts.get("error", 0) + parts.get("errors", 0)
            skipped += parts.get("skipped", 0)
    return passed, failed, skipped


def main() -> int:
    total = [0, 0, 0]
    for log in sorted(Path(sys.argv[1]).glob("*.log")):
        p, f, s = count(log.read_text(errors="replace"))
        print(f"  {log.stem}: {p} passed, {f} failed, {s} skipped")
        total = [total[0] + p, total[1] + f, total[2] + s]
    print(f"tests: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
