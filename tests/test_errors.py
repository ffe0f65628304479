"""One error family (issue 23, item 5): every error mcpwall raises on purpose is an `MCPWallError`.

Strategy: import each class from where its package exports it and check its place in the tree,
its one-line docstring, and the bases its callers still catch it by (`StateUnavailable` is still
a RuntimeError, `JsoncError` a ValueError). Then the CLI, in-process through CliRunner: the
errors under `InternalError` are answered by the code that raises them, so one that reaches a
command ends it as it did before they joined the family (the exception itself, exit 1, no
`mcpwall: ...` line), while a `ConfigError` is still a one-line message with exit 2. The real
path for that is `mcpwall pin` with an unreachable shared state.
"""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mcpwall import cli as cli_module
from mcpwall.builtin import FetchError, URLRefused
from mcpwall.cli import cli
from mcpwall.discovery._formats import ReadProblem
from mcpwall.discovery._jsonc import JsoncError
from mcpwall.discovery._rewrite import NotEditable
from mcpwall.errors import ConfigError, InternalError, MCPWallError
from mcpwall.isolation import WireError
from mcpwall.protocol import ErrorCode, ProtocolError
from mcpwall.proxy import UpstreamError
from mcpwall.relay import FrameError
from mcpwall.security.judge import JudgeError
from mcpwall.shared import StateUnavailable
from tests.harness import free_port

FAMILY = [ProtocolError, UpstreamError, StateUnavailable, FrameError, WireError, JudgeError, FetchError,
          URLRefused, ReadProblem, NotEditable, JsoncError]


@pytest.mark.parametrize("cls", [InternalError, *FAMILY], ids=lambda c: c.__name__)
def test_each_error_is_an_mcpwall_error_answered_where_it_is_raised(cls: type[Exception]) -> None:
    assert issubclass(cls, InternalError)
    assert issubclass(cls, MCPWallError)
    assert not issubclass(cls, ConfigError)


@pytest.mark.parametrize("cls", [InternalError, *FAMILY], ids=lambda c: c.__name__)
def test_each_error_has_a_one_line_docstring_of_its_own(cls: type[Exception]) -> None:
    doc = cls.__dict__.get("__doc__")
    assert isinstance(doc, str)
    assert doc.strip()
    assert "\n" not in doc.strip()


def test_the_old_bases_still_catch_what_they_caught() -> None:
    with pytest.raises(RuntimeError):
        raise StateUnavailable("shared state at redis://127.0.0.1:1/0 unavailable")
    with pytest.raises(ValueError, match="at line 1, column 2"):
        raise JsoncError("unexpected character", "{x}", 1)


def test_the_errors_module_docstring_lists_the_family() -> None:
    import mcpwall.errors

    doc = mcpwall.errors.__doc__ or ""
    for cls in [InternalError, *FAMILY]:
        assert cls.__name__ in doc


PROTOCOL = ProtocolError(ErrorCode.PARSE_ERROR, "invalid JSON: unexpected end of data")


@click.command("raise-protocol-error")
def raise_protocol_error() -> None:
    """A command whose code lets a ProtocolError through."""
    raise PROTOCOL


@click.command("raise-config-error")
def raise_config_error() -> None:
    """A command that refuses its input."""
    raise ConfigError("policy.yaml: no such file")


@pytest.fixture
def commands(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two commands above, registered as a command module is."""
    for name in ("raise-protocol-error", "raise-config-error"):
        monkeypatch.setitem(cli_module.COMMANDS, name, f"{__name__}:{name.replace('-', '_')}")


@pytest.mark.usefixtures("commands")
def test_a_protocol_error_reaching_the_cli_ends_the_command_as_before() -> None:
    result = CliRunner().invoke(cli, ["raise-protocol-error"])
    # As before issue 23: not turned into the one-line message of an error a person must fix.
    assert result.exit_code == 1
    assert result.exception is PROTOCOL
    assert result.output == ""


@pytest.mark.usefixtures("commands")
def test_a_config_error_is_still_the_clis_one_line_message() -> None:
    result = CliRunner().invoke(cli, ["raise-config-error"])
    assert result.exit_code == 2
    assert result.output == "mcpwall: policy.yaml: no such file\n"


def test_pin_with_an_unreachable_shared_state_ends_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCPWALL_STATE_URL", f"redis://127.0.0.1:{free_port()}/0")
    result = CliRunner().invoke(cli, ["pin", "--list", "--home", str(tmp_path)])
    assert result.exit_code == 1
    assert isinstance(result.exception, StateUnavailable)
    assert "mcpwall:" not in result.output
