"""zc_farm.config: the farm's settings from the environment, their errors, and URLs with their
passwords hidden. Pure: no Redis needed."""

from __future__ import annotations

import pytest

from zc_pack.zc_farm.config import FarmConfig, FarmConfigError, default_worker_id, redact_url


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


# -- only Redis URLs, and a unix:// path only when it is a socket --------------

ACCEPTED_WORDS = ["redis://host:6379/0", "rediss://", "unix:///path/to/redis.sock"]


@pytest.fixture
def unix_socket(tmp_path):
    import socket

    path = tmp_path / "redis.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    yield path
    listener.close()


@pytest.mark.parametrize("from_settings", [False, True])
@pytest.mark.parametrize("url", ["unix:///etc/passwd", "unix:///etc", "unix:///dev/null"])
def test_a_unix_url_naming_a_file_that_is_no_socket_is_refused(url, from_settings):
    from zc_pack.zc_farm.config import check_url

    with pytest.raises(FarmConfigError) as caught:
        check_url(url, "the Redis URL", from_settings=from_settings)
    message = str(caught.value)
    for word in [url, "is not a socket", *ACCEPTED_WORDS]:
        assert word in message, message
    with pytest.raises(FarmConfigError):
        FarmConfig.from_env({"ZEROCOPY_REDIS_URL": url})


def test_a_unix_url_naming_a_socket_is_accepted(unix_socket):
    from zc_pack.zc_farm.config import check_url

    url = f"unix://{unix_socket}?db=2"
    assert check_url(url, from_settings=True) == url
    assert FarmConfig.from_env({"ZEROCOPY_REDIS_URL": url}).url == url


def test_a_missing_socket_is_refused_from_the_settings_panel_and_left_to_later_from_the_environment(tmp_path):
    from zc_pack.zc_farm.config import check_url

    url = f"unix://{tmp_path}/not-yet.sock"
    with pytest.raises(FarmConfigError, match="does not exist"):
        check_url(url, "the Redis URL", from_settings=True)
    assert check_url(url) == url  # ZEROCOPY_REDIS_URL: Redis may start after ComfyUI


@pytest.mark.parametrize("url", ["unix://relative/redis.sock", "unix://host/run/redis.sock", "unix://",
                                 "file:///etc/passwd", "redis+sentinel://h/0", "unix:///run/x\x00.sock"])
def test_other_forms_are_refused_naming_the_accepted_ones(url):
    from zc_pack.zc_farm.config import check_url

    with pytest.raises(FarmConfigError) as caught:
        check_url(url, from_settings=True)
    assert all(word in str(caught.value) for word in ACCEPTED_WORDS), str(caught.value)


def test_the_settings_panel_may_not_name_files_in_the_query():
    from zc_pack.zc_farm.config import check_url

    url = "rediss://h:6380/0?ssl_ca_certs=/etc/passwd"
    with pytest.raises(FarmConfigError, match="ssl_ca_certs"):
        check_url(url, "the Redis URL", from_settings=True)
    assert check_url(url) == url  # the environment (the server's own setting) may
    assert check_url("redis://h/0?db=3&password=x", from_settings=True)
