"""Header detection (models/logs/headers.py): hand cases for the layouts logs use, and a property
test over generated layouts. The twelve Loghub logs are in tests/test_loghub_accuracy.py."""

from __future__ import annotations

import random

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusre.models.logs.headers import detect_header, split_header


def messages_of(lines: list[str]) -> list[str]:
    return split_header(pl.Series(lines))["message"].to_list()


def test_syslog_with_and_without_pid_and_an_optional_field() -> None:
    lines = [
        "Jun 14 15:16:01 combo sshd(pam_unix)[19939]: authentication failure; uid=0",
        "Jun 14 15:16:02 combo kernel: Linux version 2.6.5",
        "Jun  9 06:06:20 combo syslogd 1.4.1: restart.",
        "Jul  1 09:01:05 mac-10-1 com.apple.xpc.launchd[1] (com.apple.pid.35657): Service exited",
    ] * 5
    assert messages_of(lines)[:4] == [
        "authentication failure; uid=0",
        "Linux version 2.6.5",
        "restart.",
        "Service exited",
    ]


def test_bracketed_pipe_and_dash_separated_headers() -> None:
    apache = ["[Sun Dec 04 04:47:44 2005] [notice] workerEnv.init() ok /etc/httpd.conf",
              "[Sun Dec 04 04:51:08 2005] [error] mod_jk child workerEnv in error state 6"] * 3
    assert messages_of(apache)[:2] == ["workerEnv.init() ok /etc/httpd.conf", "mod_jk child workerEnv in error state 6"]
    pipes = ["20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579",
             "20171223-22:15:29:633|Step_StandReportReceiver|30002312|onReceive action: on"] * 3
    assert messages_of(pipes)[:2] == ["onStandStepChanged 3579", "onReceive action: on"]
    dashes = ["[10.30 16:49:06] chrome.exe - proxy.example.com:5070 open through proxy",
              "[10.30 16:51:56] svchost.exe *64 - proxy.example.com:5070 close, 303 bytes sent"] * 3
    assert messages_of(dashes)[:2] == ["proxy.example.com:5070 open through proxy",
                                       "proxy.example.com:5070 close, 303 bytes sent"]


def test_kernel_ring_buffer_with_priority_and_uptime() -> None:
    # dmesg -r / pstore: a syslog priority glued to the bracketed uptime (spaces inside).
    lines = ["<6>[  201.650687] sysrq: SysRq : Trigger a crash",
             "<1>[  201.654822] BUG: unable to handle kernel NULL pointer dereference",
             "<4>[  201.668783] PGD 0"] * 3
    assert messages_of(lines)[:3] == ["sysrq: SysRq : Trigger a crash",
                                      "BUG: unable to handle kernel NULL pointer dereference", "PGD 0"]


def test_continuation_lines_keep_their_text_and_do_not_hide_the_header() -> None:
    lines = [
        "2015-10-18 18:01:47,978 INFO [main] org.apache.App: Created app 7",
        "2015-10-18 18:01:48,963 WARN [IPC Server handler 3] org.apache.Rpc: Retrying connect",
        "\tat org.apache.Rpc.call(Rpc.java:12)",
        "\tat org.apache.Rpc.run(Rpc.java:40)",
        "\tat java.lang.Thread.run(Thread.java:745)",
    ] * 4
    split = split_header(pl.Series(lines))
    assert split["message"].to_list()[:5] == ["Created app 7", "Retrying connect", *lines[2:5]]
    assert split["header"][0] == "2015-10-18 18:01:47,978 INFO [main] org.apache.App: "
    assert (split["header"] + split["message"]).to_list() == lines


def test_messages_without_header_are_left_whole() -> None:
    lines = ["disk sda1 failed at 12:00", "disk sdb2 failed at 13:05", "link up", "user root logged in"]
    assert detect_header(pl.Series(lines)) is None
    assert messages_of(lines) == lines


def test_empty_null_and_bad_settings() -> None:
    assert detect_header(pl.Series([], dtype=pl.String)) is None
    split = split_header(pl.Series(["2020-01-01 10:00:00 INFO a: x", None, "", "2020-01-01 10:00:01 INFO b: y"]))
    assert split["message"].to_list() == ["x", "", "", "y"]
    with pytest.raises(ValueError, match="min_support"):
        detect_header(pl.Series(["a"]), min_support=0.0)


# -- generated layouts ------------------------------------------------------------------------

# Header fields as logs write them, each from a random source; plain words never end a header.
FIELDS = {
    "iso_date": lambda r: f"2024-{r.randint(1, 12):02}-{r.randint(1, 28):02}",
    "clock": lambda r: f"{r.randint(0, 23):02}:{r.randint(0, 59):02}:{r.randint(0, 59):02},{r.randint(0, 999):03}",
    "month_day": lambda r: f"{r.choice(['Jan', 'Jun', 'Dec'])} {r.randint(1, 28):2}",
    "epoch": lambda r: str(r.randint(10**9, 2 * 10**9)),
    "level": lambda r: r.choice(["INFO", "WARN", "ERROR", "DEBUG"]),
    "thread": lambda r: f"[pool-{r.randint(1, 9)}-thread-{r.randint(1, 99)}]",
    "host": lambda r: f"gpu{r.randint(1, 512):03}",
    "word": lambda r: r.choice(["combo", "kernel", "RAS"]),
}
ENDS = {
    "tag": lambda r: f" {r.choice(['sshd', 'slurmd', 'org.example.Worker'])}[{r.randint(1, 99999)}]:",
    "dash": lambda r: f" {r.choice(['chrome.exe', 'slurmctld'])} -",
    "pipe": lambda r: f"|{r.randint(1, 9999)}|",
    "none": lambda r: f" {r.randint(1, 99999)}",  # a pid: a header may end after a value
}
# Message words that no shape mistakes for a header field (no digits, levels or month names).
WORDS = ["disk", "link", "job", "started", "failed", "retry", "connection", "closed", "user", "queue"]


@settings(max_examples=60, deadline=None)
@given(
    fields=st.lists(st.sampled_from(sorted(FIELDS)), min_size=1, max_size=5),
    end=st.sampled_from(sorted(ENDS)),
    messages=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join), min_size=1, max_size=8),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_generated_header_is_split_off_exactly(fields: list[str], end: str, messages: list[str], seed: int) -> None:
    rng = random.Random(seed)
    headers = [" ".join(FIELDS[f](rng) for f in fields) + ENDS[end](rng) for _ in range(40)]
    bodies = [rng.choice(messages) for _ in range(40)]
    lines = [h + ("" if end == "pipe" else " ") + b for h, b in zip(headers, bodies)]
    split = split_header(pl.Series(lines))
    assert split["message"].to_list() == bodies
    assert (split["header"] + split["message"]).to_list() == lines
