import os
import sys

from eaglegraph.system.proc import command_line


def test_command_line_of_this_process_names_the_interpreter() -> None:
    line = command_line(os.getpid())
    if sys.platform.startswith("linux"):
        assert line is not None and "python" in line.lower()
        assert "\x00" not in line


def test_command_line_of_a_missing_process_is_none() -> None:
    assert command_line(2**22 + 12345) is None
