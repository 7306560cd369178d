"""The pack's exception types read "ZeroCopy.<Name>" where ComfyUI names them (execution.py's
full_type_name: module + "." + qualname), never the module ComfyUI gives a pack (its folder's path),
and still pickle, copy and compare as the classes they are."""

from __future__ import annotations

import copy
import pickle

import pytest

from zc_pack.zc_continuity.errors import ContinuityError
from zc_pack.zc_engine import errors as engine_errors
from zc_pack.zc_farm.config import FarmConfigError
from zc_pack.zc_film.errors import RenderError


def full_type_name(klass):  # ComfyUI's execution.full_type_name, verbatim in behaviour
    module = klass.__module__
    return klass.__qualname__ if module == "builtins" else module + "." + klass.__qualname__


ENGINE = [engine_errors.error_for(code, f"message {code}") for code in range(-11, 0)]


@pytest.mark.parametrize("error", [ContinuityError("a value"), RenderError("a render"),
                                   FarmConfigError("a setting"), *ENGINE], ids=lambda e: type(e).__name__)
def test_each_type_reads_zerocopy_dot_its_name_and_survives_pickle_and_copy(error):
    assert full_type_name(type(error)) == f"ZeroCopy.{type(error).__name__}"
    for again in (pickle.loads(pickle.dumps(error)), copy.deepcopy(error)):
        assert type(again) is type(error) and again.args == error.args and str(again) == str(error)
        assert getattr(again, "code", None) == getattr(error, "code", None)


def test_engine_errors_keep_their_builtin_bases():
    assert isinstance(engine_errors.error_for(-3, "x"), KeyError)
    assert isinstance(engine_errors.error_for(-6, "x"), OSError)
    assert isinstance(engine_errors.error_for(-11, "x"), engine_errors.EngineIOError)
    assert str(engine_errors.error_for(-3, "no latent")) == "no latent"  # not KeyError's quotes
