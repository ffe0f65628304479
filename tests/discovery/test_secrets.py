"""Secrets found in configs never appear in any output: reports, SARIF, check, init, errors.

Strategy: adversarial configs put generated credentials everywhere a config
can hold one (env values, headers, arguments after `--token`, `--api-key=`,
URL user info and query strings, a whole command line in `command`, a line of
a malformed YAML file, a server name), then every command that prints is run
and its output searched for each credential. Hypothesis varies the
credentials' shape; fixed cases cover the known token formats.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from mcpwall.cli import cli
from mcpwall.discovery import is_secret_name, redact_args, redact_url
from tests.discovery.homes import write

ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def plant(home: Path, s: dict[str, str]) -> None:
    """Configs holding the secrets s[...] in every place a client config can."""
    write(home, ".cursor/mcp.json", json.dumps({"mcpServers": {
        "env-secret": {"command": "npx", "args": ["-y", "srv"], "env": {"GITHUB_TOKEN": s["env"],
                                                                       "SOME_SETTING": s["plain_env"]}},
        "arg-secret": {"command": "srv", "args": ["--token", s["arg"], f"--api-key={s['arg_eq']}"]},
        "url-secret": {"url": f"https://user:{s['userinfo']}@mcp.example.com/mcp?api_key={s['query']}"},
        "header-secret": {"url": "https://h.example.com/mcp", "headers": {"Authorization": f"Bearer {s['header']}",
                                                                           "X-Api-Key": s["header2"]}},
        "cmdline": {"command": f"srv --password={s['cmdline']}"},
        "docker": {"command": "docker", "args": ["run", "-e", f"API_KEY={s['docker']}", "img"]},
    }}))
    write(home, ".continue/config.yaml", f"mcpServers:\n  - name: x\n    env: {{TOKEN: {s['yaml']}}}\n    bad: [\n")
    write(home, ".codex/config.toml", f'[mcp_servers.t]\ncommand = "x"\nenv = {{ SECRET = "{s["toml"]}" }}\n'
                                      f'[mcp_servers.t.http_headers]\nAuthorization = "Bearer {s["toml2"]}"\n')


KEYS = ["env", "plain_env", "arg", "arg_eq", "userinfo", "query", "header", "header2", "cmdline", "docker", "yaml",
        "toml", "toml2"]
#: Values the config holds under names that are not credentials; they are never printed either, but are not
#: promised to be masked if they also occur elsewhere.
NOT_SECRET = {"plain_env"}


def outputs(home: Path, state: Path) -> list[str]:
    runner = CliRunner()
    base = ["--scan-home", str(home), "--platform", "linux"]
    texts = []
    for args in (["check", *base], ["check", "--json", *base], ["report", *base],
                 ["report", "--format", "json", *base], ["report", "--sarif", *base],
                 ["init", "--dry-run", "--home", str(state), "--mcpwall", "/bin/true", *base]):
        result = runner.invoke(cli, args, catch_exceptions=False)
        texts.append(result.output + (result.stderr if result.stderr_bytes else ""))
    return texts


def check_clean(s: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        home, state = Path(tmp) / "home", Path(tmp) / "state"
        plant(home, s)
        for text in outputs(home, state):
            for key, value in s.items():
                assert value not in text, f"{key} leaked"


def test_known_token_formats_never_appear_in_any_output() -> None:
    s = {"env": "ghp_" + "a1B2" * 9, "plain_env": "blue-green-deploy", "arg": "sk-proj-" + "Z9y8" * 6,
         "arg_eq": "xoxb-1234-5678-abcdefghij", "userinfo": "hunter2hunter2", "query": "AKIA" + "ABCDEFGHIJKLMNOP",
         "header": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "header2": "glpat-" + "x1Y2" * 6,
         "cmdline": "correct-horse-battery", "docker": "AIza" + "B" * 35, "yaml": "yamlsecret-" + "q" * 20,
         "toml": "tomlsecret-" + "w" * 20, "toml2": "npm_" + "c" * 36}
    check_clean(s)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          phases=[Phase.explicit, Phase.reuse, Phase.generate])
@given(st.lists(st.text(alphabet=ALNUM + "-_.+/", min_size=10, max_size=40).filter(lambda v: v.strip(".-") == v),
                min_size=len(KEYS), max_size=len(KEYS), unique=True))
def test_generated_credentials_never_appear_in_any_output(values: list[str]) -> None:
    s = {k: f"Zq{v}9" for k, v in zip(KEYS, values, strict=True)}
    s.pop("plain_env")
    s["plain_env"] = "not-a-secret-setting"
    check_clean(s)


def test_error_messages_of_malformed_files_never_quote_their_content(tmp_path: Path) -> None:
    secret = "sup3r-s3cret-value-" + "x" * 10
    write(tmp_path, ".config/goose/config.yaml", f"extensions:\n  a:\n    envs: {{K: {secret}}}\n    b: [\n")
    write(tmp_path, ".gemini/settings.json", f'{{"mcpServers": {{"a": {{"env": {{"K": "{secret}"}}}}')
    write(tmp_path, ".codex/config.toml", f'[mcp_servers.a]\nenv = {{ K = "{secret}" \n')
    data = json.loads(CliRunner().invoke(cli, ["report", "--format", "json", "--scan-home", str(tmp_path),
                                               "--platform", "linux"]).stdout)
    assert len(data["problems"]) == 3
    assert secret not in json.dumps(data)
    assert all("line" in p["error"] for p in data["problems"])


@pytest.mark.parametrize(("name", "secret"), [
    ("GITHUB_TOKEN", True), ("github_token", True), ("apiKey", True), ("x-api-key", True), ("DB_PASSWORD", True),
    ("AWS_SECRET_ACCESS_KEY", True), ("PRIVATE_KEY", True), ("Authorization", True), ("SLACK_BOT_TOKEN", True),
    ("OPENAI_APIKEY", True), ("PATH", False), ("HOME", False), ("KEYBOARD", False), ("SSH_KEY_PATH", False),
    ("PUBLIC_KEY", False), ("AUTHOR", False), ("TOKEN_URL", False), ("LOG_LEVEL", False),
])
def test_credential_names_are_recognised_by_their_words(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_redaction_keeps_flags_and_hosts_and_hides_values() -> None:
    assert redact_args(["--token", "abc123456", "--port", "80", "--api-key=zzz999zzz"]) == \
        ["--token", "***", "--port", "80", "--api-key=***"]
    assert redact_url("https://u:p4ssw0rd@h.example.com/x?token=abc&v=1") == "https://u:***@h.example.com/x?token=***&v=1"
    assert redact_url("https://h.example.com/mcp") == "https://h.example.com/mcp"


def test_a_command_line_in_one_argument_is_redacted_word_by_word() -> None:
    """`bash -c "srv --token X"`: the secret is a word of one argv element (it was printed in clear)."""
    assert redact_args(["-c", "srv --token SUPERSECRETVALUE123456789 --port 80"]) == \
        ["-c", "srv --token *** --port 80"]
    assert redact_args(["-c", "exec srv --api-key=SUPERSECRETVALUE444444444"]) == ["-c", "exec srv --api-key=***"]
    assert redact_args(["-c", "npx -y @modelcontextprotocol/server-filesystem /tmp"]) == \
        ["-c", "npx -y @modelcontextprotocol/server-filesystem /tmp"]
    assert redact_args(["--password=correct horse battery staple"]) == ["--password=***"]  # one value
    # whitespace shlex does not split on (it recursed without end)
    assert redact_args(["-c", "srv\u00a0--token\u000bSUPERSECRETVALUE123456789"]) == ["-c", "srv --token ***"]


def test_a_word_like_secret_is_masked_as_a_value_but_names_ids_and_paths_stay_readable(tmp_path: Path) -> None:
    """Issue 29, item 4: an inline credential `secret` turned `srv-secret-env-names` into `srv-***-env-names`."""
    home, state = tmp_path / "home", tmp_path / "state"
    write(home, ".cursor/mcp.json", json.dumps({"mcpServers": {
        "srv-secret-env-names": {"command": "srv", "env": {"API_PASSWORD": "secret"}},
        "plain-secret-name": {"command": "/opt/secret/bin/srv", "args": ["--password", "secret"]},
    }}))
    base = ["--scan-home", str(home), "--platform", "linux"]
    for args in (["check", "--json"], ["report"], ["report", "--format", "json"], ["report", "--sarif"]):
        text = CliRunner().invoke(cli, [*args, *base], catch_exceptions=False).output
        for name in ("srv-secret-env-names", "plain-secret-name"):
            assert name in text, args
        for masked_name in ("-***", "/***", "***-"):
            assert masked_name not in text, args
        assert re.search(r"(?<![\w.\-/])secret(?![\w.\-/])", text) is None, args
    markdown = CliRunner().invoke(cli, ["report", *base], catch_exceptions=False).output
    assert "/opt/secret/bin/srv --password ***" in markdown
    assert "| inline-secret |" in markdown
    assert all("srv-***" not in text for text in outputs(home, state))
