"""What ComfyUI reports when a node of the pack fails, through its real executor and validator:
the execution_error message (the websocket event the frontend's error panel and report are built
from, ``${exception_type}: ${exception_message}``) and the history's status messages carry a short
type ("ZeroCopy.ContinuityError") and the pack's own sentence first, with no install path, no
module path and no repeated prefix; a refused tag is said once, counting characters from 1."""

from __future__ import annotations

import pytest
from test_families_support import pack  # noqa: F401

from conftest import REPO, ComfyRunError, Graph


def load(g, tag):
    return g.add("ZeroCopyLatentLoad", buffer_tag=tag, shot="newest", generation=0, frames=0, frames_from="end")


def test_a_load_of_a_tag_with_nothing_stored_reports_the_packs_sentence_under_a_short_type(comfyui, captures, pack):
    g = Graph()
    node = load(g, "errors_never_stored")
    run = comfyui.run(g.prompt, targets=[node], expect_error=True)
    sent = [d for e, d in run.events if e == "execution_error"]
    kept = [d for e, d in comfyui.executor.status_messages if e == "execution_error"]  # the history's
    assert len(sent) == 1 and kept and kept[-1]["exception_type"] == sent[0]["exception_type"], (sent, kept)
    error = sent[0]
    assert error["node_type"] == "ZeroCopyLatentLoad"
    assert error["exception_type"] == "ZeroCopy.ContinuityError", error["exception_type"]
    message = error["exception_message"]
    assert message.startswith('no latent is stored under tag "errors_never_stored"; '), message
    shown = f"{error['exception_type']}: {message}"  # the frontend's error panel line
    for leak in (str(REPO), REPO.name, "zc_continuity", "zc_engine", ".errors.", "/custom_nodes/"):
        assert leak not in shown, (leak, shown)
    assert shown.count("ContinuityError") == 1, shown


def test_a_bad_tag_is_refused_once_counting_from_1(comfyui, captures, pack):
    g = Graph()
    node = load(g, "my film/shot#1")
    with pytest.raises(ComfyRunError) as caught:
        comfyui.run(g.prompt, targets=[node])
    errors = [e for reasons in caught.value.error["node_errors"].values() for e in reasons]
    said = ("buffer_tag - tag \"my film/shot#1\" has a space at character 3; tags use only letters, digits, "
            "'_', '-' and '.' (write '_' for the space)")  # ComfyUI's "buffer_tag - ", then the pack's, once
    assert [e["details"] for e in errors] == [said], errors
