"""What leaves through the API instead of a server path (zc_nodes/api/redaction.py): a path in
the spill folder keeps its place inside it; any other server path keeps only its file name and
is not claimed to be in the spill folder (a farm or engine fix that said "<spill folder>/main"
sent the user to a folder that does not hold it)."""

from __future__ import annotations

import pytest

from zc_nodes.api.redaction import redact_paths

SPILL = "/srv/comfy/user/zerocopy_continuity/spill"


@pytest.mark.parametrize("message, shown", [
    (f"cannot write {SPILL}/wan.g3.zc: No space left on device",
     "cannot write <spill folder>/wan.g3.zc: No space left on device"),
    (f"cannot open '{SPILL}/gray_padding/ab12.zc'", "cannot open '<spill folder>/gray_padding/ab12.zc'"),
    (f'the spill folder "{SPILL}" was removed', 'the spill folder "<spill folder>" was removed'),
    (f"the folder {SPILL} is read-only", "the folder <spill folder> is read-only"),
    ("ZC_LIBRARY names /tmp/x/no-engine/libzc.so, which does not exist; build one: make -C /opt/pack",
     "ZC_LIBRARY names <server path>/libzc.so, which does not exist; build one: make -C <server path>/pack"),
    (f"{SPILL}-old/wan.g1.zc is not ours", "<server path>/wan.g1.zc is not ours"),  # a sibling is not inside
    (r"cannot load C:\Users\me\zc.dll: missing", "cannot load <server path>/zc.dll: missing"),
    ("no path here: 3/4 done, ratio 0.5", "no path here: 3/4 done, ratio 0.5"),
])
def test_spill_paths_keep_their_place_and_other_paths_only_their_name(message, shown):
    assert redact_paths(message, SPILL) == shown


def test_a_windows_spill_folder_is_recognised():
    assert redact_paths(r"write D:\films\spill\wan.g1.zc failed", "D:\\films\\spill") == \
        "write <spill folder>/wan.g1.zc failed"


def test_without_the_folder_named_it_is_the_stores(monkeypatch, tmp_path):
    monkeypatch.setenv("ZEROCOPY_SPILL_DIR", str(tmp_path / "spill"))
    from zc_nodes import runtime
    monkeypatch.setattr(runtime, "_store", None)  # no store open: the folder the next one will use
    assert redact_paths(f"cannot write {tmp_path}/spill/t.g1.zc") == "cannot write <spill folder>/t.g1.zc"
    assert redact_paths(f"cannot read {tmp_path}/other/t.g1.zc") == "cannot read <server path>/t.g1.zc"
