"""The Redis counter of `slack_turns --count-redis` names what redis-py sends: a command, a
pipeline's commands in order, a script by where it was registered."""

from __future__ import annotations

import hashlib

from redis.asyncio.connection import Connection

from benchmarks.redis_sends.sitecustomize import SCRIPTS, command_names


def test_commands_and_pipelines_by_name() -> None:
    connection = Connection()
    assert command_names(connection.pack_command("EXISTS", "k")) == "EXISTS"
    pipeline = connection.pack_commands(
        [("GET", "gen"), ("GET", "roles"), ("HGETALL", "switches"), ("GET", "x")]
    )
    assert command_names(pipeline) == "GET*2+HGETALL+GET"
    value = "a value with\r\n$3\r\nGET inside, and é"
    assert command_names(connection.pack_command("SET", "k", value)) == "SET"


def test_a_script_by_where_it_was_registered() -> None:
    script = "return 1"
    sha = hashlib.sha1(script.encode()).hexdigest()
    SCRIPTS[sha] = "records.py:208"
    try:
        packed = Connection().pack_command("EVALSHA", sha, 1, "key", "arg")
        assert command_names(packed) == "EVALSHA(records.py:208)"
    finally:
        del SCRIPTS[sha]
    unknown = Connection().pack_command("EVALSHA", "0" * 40, 0)
    assert command_names(unknown) == "EVALSHA(00000000)"
