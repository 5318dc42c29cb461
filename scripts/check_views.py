"""Render saved runs at 80 and 200 columns and check them as the width test does.

Usage: python3 scripts/check_views.py RUN.json...  (files that are not eaglegraph runs are
skipped). Used by gpu-check's `views` stage on the real CUDA runs the other stages saved: no
line wider than the console, no number cut to "…", no name split across lines. Exit 1 when a
view fails, naming the file, the width and the lines.
"""

from __future__ import annotations

import json
import sys

from eaglegraph.errors import BadInput
from eaglegraph.results import load_run
from eaglegraph.serial import to_jsonable
from tests.cli.test_view_widths import WIDTHS, _render, check_text


def main(paths: list[str]) -> int:
    failed = checked = 0
    for path in paths:
        try:
            run = load_run(path)
        except BadInput:
            continue
        data = json.dumps(to_jsonable(run), ensure_ascii=False)
        wide = _render(run, 1000)
        for width in WIDTHS:
            checked += 1
            try:
                check_text(_render(run, width), width, data, wide)
            except AssertionError as exc:
                failed += 1
                print(f"FAIL {path} at {width} columns: {str(exc)[:600]}")
    print(f"{checked - failed}/{checked} views fit ({len(paths)} files given)")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
