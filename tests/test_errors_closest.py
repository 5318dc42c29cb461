from eaglegraph.errors import BadInput, closest, unknown_choice


def test_closest_ranks_near_names_first_and_ignores_case() -> None:
    assert closest("inpsect", ["capture", "inspect", "probe"]) == ["inspect"]
    assert closest("h10", ["H100", "A100", "L40"])[0] == "H100"
    assert closest("zzzz", ["H100", "A100"]) == []


def test_unknown_choice_is_one_line_with_hint_and_all_names() -> None:
    err = unknown_choice("GPU", "H10", ["H100", "H20", "A100"])
    assert isinstance(err, BadInput)
    assert "unknown GPU 'H10'" in err.message and "A100" in err.message
    assert err.hint is not None and err.hint.startswith("did you mean H100")
    assert unknown_choice("mode", "qqq", ["FULL", "NONE"]).hint is None
