"""Serving a room (`pipeline.room`, `pipeline.audit.rooms`): which binds count as served to a
network, the addresses printed for it, join codes, per-room names bound to a key, the write limit."""

from __future__ import annotations

import pytest

from pipeline import room
from pipeline.audit.rooms import NameClaims


@pytest.mark.parametrize("address, served", [("127.0.0.1", False), ("localhost", False), ("::1", False),
                                             ("LOCALHOST", False), ("127.0.0.2", True), ("0.0.0.0", True),
                                             ("::", True), ("", True), ("192.0.2.7", True)])
def test_only_the_three_private_binds_count_as_this_machine(address, served):
    assert room.served_to_network(address) is served


def test_a_named_bind_address_is_the_one_printed():
    assert room.student_urls("127.0.0.2", 8611, "audit") == ["http://127.0.0.2:8611/audit"]
    assert room.student_urls("fe80::1", 80) == ["http://[fe80::1]:80/"]


def test_all_interfaces_lists_this_machines_reachable_addresses_never_loopback(monkeypatch):
    monkeypatch.setattr(room, "interface_addresses",
                        lambda: {"lo": ["127.0.0.1", "::1"], "eth0": ["192.0.2.2", "fe80::5"], "wlan0": ["10.1.2.3"]})
    assert room.student_urls("0.0.0.0", 8501, "audit") == ["http://10.1.2.3:8501/audit", "http://192.0.2.2:8501/audit"]
    assert room.resolve_bind("wlan0") == "10.1.2.3"
    assert room.resolve_bind("0.0.0.0") == "0.0.0.0"


def test_the_start_lines_name_the_code_only_when_served():
    assert "join code" not in " ".join(room.serve_lines("127.0.0.1", 8501, None))
    lines = room.serve_lines("127.0.0.2", 8501, "K7QX2M")
    assert "  open: http://127.0.0.2:8501/" in lines
    assert any(line.endswith(": K7QX2M") for line in lines)


def test_join_codes():
    code = room.new_join_code()
    assert len(code) == room.JOIN_CODE_LENGTH and set(code) <= set(room.CODE_ALPHABET)
    assert room.code_matches(" k7qx-2m ", "K7QX2M")
    assert not room.code_matches("K7QX2N", "K7QX2M")
    assert not room.code_matches("", None) and not room.code_matches("anything", "")
    assert room.room_id("K7QX2M") == room.room_id("k7qx2m") != room.room_id("K7QX2N")


def test_a_name_belongs_to_the_first_key_per_room(tmp_path):
    claims = NameClaims(tmp_path / "labels.sqlite")
    assert claims.claim("roomA", "Ana", "KEY1")
    assert claims.claim("roomA", "Ana", "key1")  # the owner again (a key is typed in any case)
    assert not claims.claim("roomA", "  ana ", "KEY2")  # another session, same name in another case
    assert claims.claim("roomB", "Ana", "KEY2")  # another room: another Ana
    assert not claims.claim("roomA", "Ben", "")
    assert claims.owner_is("roomA", "ANA", "KEY1") and not claims.owner_is("roomA", "Zed", "KEY1")


def test_the_write_limit_refills_with_time():
    now = [0.0]
    limit = room.RateLimit(per_minute=60, burst=3, clock=lambda: now[0])
    assert [limit.allow() for _ in range(4)] == [True, True, True, False]
    now[0] += 1.0  # one write a second comes back
    assert limit.allow() and not limit.allow()
    now[0] += 600.0  # never more than the burst at once
    assert sum(limit.allow() for _ in range(10)) == 3
