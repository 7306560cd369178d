"""zc_farm.config: the farm's settings from the environment, their errors, and URLs with their
passwords hidden. Pure: no Redis needed."""

from __future__ import annotations

import pytest

from zc_farm.config import FarmConfig, FarmConfigError, default_worker_id, redact_url


@pytest.mark.parametrize("url, shown", [
    ("redis://10.0.0.5:6379/0", "redis://10.0.0.5:6379/0"),
    ("redis://:s3cret@10.0.0.5:6379/0", "redis://:***@10.0.0.5:6379/0"),
    ("rediss://farm:s3cret@redis.studio:6380/2", "rediss://farm:***@redis.studio:6380/2"),
    ("redis://s3cret@host/0", "redis://***@host/0"),
    ("redis://host/0?password=s3cret&db=1", "redis://host/0?password=***&db=1"),
    ("unix:///run/redis.sock?password=s3cret", "unix:///run/redis.sock?password=***"),
])
def test_a_password_never_shows(url, shown):
    assert redact_url(url) == shown
    assert "s3cret" not in redact_url(url)


def test_no_url_no_farm():
    assert FarmConfig.from_env({}) is None
    assert FarmConfig.from_env({"ZEROCOPY_REDIS_URL": "  "}) is None


def test_settings_from_the_environment():
    config = FarmConfig.from_env({"ZEROCOPY_REDIS_URL": "rediss://u:pw@h:6380/1", "ZEROCOPY_WORKER_ID": "gpu-7",
                                  "ZEROCOPY_REDIS_KEEP": "3", "ZEROCOPY_REDIS_CHUNK_MB": "2",
                                  "ZEROCOPY_REDIS_TIMEOUT_S": "0.25", "ZEROCOPY_REDIS_PASSWORD": "other"})
    assert (config.worker_id, config.keep, config.chunk_bytes, config.timeout_s) == ("gpu-7", 3, 2 << 20, 0.25)
    assert config.password == "other" and config.redacted_url == "rediss://u:***@h:6380/1"
    # a URL from the settings panel wins over the environment's
    assert FarmConfig.from_env({"ZEROCOPY_REDIS_URL": "redis://a/0"}, url="redis://b/0").url == "redis://b/0"
    assert FarmConfig.from_env({"ZEROCOPY_REDIS_URL": "redis://a/0"}).worker_id == default_worker_id()


@pytest.mark.parametrize("env, words", [
    ({"ZEROCOPY_REDIS_URL": "http://:pw@h:6379"}, ["not a Redis URL", "redis://host:6379/0", "***"]),
    ({"ZEROCOPY_REDIS_URL": "redis:///0"}, ["names no host"]),
    ({"ZEROCOPY_REDIS_URL": "redis://h/0", "ZEROCOPY_REDIS_KEEP": "0"}, ["ZEROCOPY_REDIS_KEEP=0", "1..1000"]),
    ({"ZEROCOPY_REDIS_URL": "redis://h/0", "ZEROCOPY_REDIS_KEEP": "many"}, ["not a whole number"]),
    ({"ZEROCOPY_REDIS_URL": "redis://h/0", "ZEROCOPY_REDIS_CHUNK_MB": "1024"}, ["ZEROCOPY_REDIS_CHUNK_MB", "MiB"]),
    ({"ZEROCOPY_REDIS_URL": "redis://h/0", "ZEROCOPY_REDIS_TIMEOUT_S": "-1"}, ["ZEROCOPY_REDIS_TIMEOUT_S"]),
    ({"ZEROCOPY_REDIS_URL": "redis://h/0", "ZEROCOPY_WORKER_ID": "a\nb"}, ["ZEROCOPY_WORKER_ID", "printable"]),
])
def test_bad_settings_name_the_value_and_the_fix(env, words):
    with pytest.raises(FarmConfigError) as caught:
        FarmConfig.from_env(env)
    message = str(caught.value)
    for word in words:
        assert word in message
    assert "pw" not in message.replace("***", "")
