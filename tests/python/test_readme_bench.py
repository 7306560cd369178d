"""The README's benchmark table is the benchmark's own output, never typed by hand."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_readme_benchmark_table_matches_the_result_file():
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "update_readme_bench.py"), "--check"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
