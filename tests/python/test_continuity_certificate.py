"""Handoff certificates: the bit-identical claim is derived, and the text says what happened."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from zc_pack.zc_continuity import Certificate

DIGEST = "xxh3:0123456789abcdef"
OTHER = "xxh3:fedcba9876543210"


def make(**changes):
    values = dict(tag="shot01", generation=3, stored_digest=DIGEST, used_digest=DIGEST,
                  adapter="wan_i2v", family="wan21", tail_frames=2,
                  overlap_pixel_frames=5)
    values.update(changes)
    return Certificate(**values)


@given(resampled=st.booleans(), blended=st.booleans(),
       stored=st.sampled_from([DIGEST, OTHER, None]), used=st.sampled_from([DIGEST, OTHER, None]))
@settings(max_examples=60, deadline=None)
def test_bit_identical_truth_table(resampled, blended, stored, used):
    cert = make(resampled=resampled, blended=blended, stored_digest=stored, used_digest=used)
    expected = not resampled and not blended and stored is not None and stored == used
    assert cert.bit_identical is expected
    assert (cert.reasons() == []) is expected
    assert ("bit-identical: yes" in cert.to_text()) is expected
    assert cert.to_dict()["bit_identical"] is expected


def test_text_of_a_clean_handoff():
    text = make().to_text()
    assert "'shot01'" in text and "generation 3" in text
    assert text.count(DIGEST) == 2
    assert "bit-identical: yes" in text
    assert "wan_i2v" in text and "wan21" in text and "tail_frames 2" in text
    assert "first 5 pixel frames" in text


def test_text_says_why_not_identical():
    text = make(resampled=True, blended=True, blend_ratio=0.25, used_digest=OTHER,
                notes=["resampled 60x104 -> 90x160 (bicubic)"]).to_text()
    assert "bit-identical: no" in text
    assert "resampled in latent space" in text and "blend_ratio 0.25" in text
    assert "digest differs" in text
    assert "note: resampled 60x104 -> 90x160 (bicubic)" in text


def test_missing_digest_is_not_identical():
    cert = make(stored_digest=None, used_digest=None)
    assert not cert.bit_identical
    assert "digest is missing" in cert.to_text() and "stored digest none" in cert.to_text()


def test_image_handoff_has_nothing_to_trim():
    assert "nothing to trim" in make(overlap_pixel_frames=0).to_text()


def test_to_dict_is_json_ready():
    data = make(notes=["a"]).to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["tag"] == "shot01" and data["notes"] == ["a"] and data["blend_ratio"] == 0.0


def test_notes_are_not_shared_between_certificates():
    first, second = make(), make()
    first.notes.append("x")
    assert second.notes == []


@given(adjusted=st.booleans(), decodes=st.integers(0, 1), audio=st.sampled_from(
    [None, (DIGEST, DIGEST), (DIGEST, OTHER), (None, DIGEST)]))
@settings(max_examples=40, deadline=None)
def test_adjustments_bridges_and_audio_enter_the_claim(adjusted, decodes, audio):
    streams = {} if audio is None else {"audio": audio}
    cert = make(adjusted=adjusted, adjustment="colour anchor: matched", bridge_decodes=decodes,
                bridge_encodes=decodes, streams=streams)
    audio_ok = audio is None or (audio[0] is not None and audio[0] == audio[1])
    expected = not adjusted and not decodes and audio_ok
    assert cert.bit_identical is expected and (cert.reasons() == []) is expected
    text = cert.to_text()
    if adjusted:
        assert "adjusted: colour anchor: matched" in text
    if decodes:
        assert "pixel bridge: 1 decode(s), 1 encode(s)" in text
    if audio is not None:
        assert "audio stored digest" in text and "audio used digest" in text
    assert json.loads(json.dumps(cert.to_dict())) == cert.to_dict()
