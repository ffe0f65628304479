"""Stage factories, their policy sections, and `rbac-init`, without a gateway.

Strategy: each stage's `build(config, settings)` is called with the raw policy
sections as the gateway passes them; bad sections must fail at startup with a
message naming the key. The RBAC stage's decision function is called directly
on the files `mcpwall rbac-init` writes (CliRunner in-process).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from mcpwall.cli import cli
from mcpwall.errors import ConfigError
from mcpwall.stages import pins, poisoning, rbac


@dataclass
class Settings:
    home: Path
    policy_path: Path | None = None


@dataclass
class FakeSession:
    agent: str = ""
    client_name: str = ""


def _init(home: Path, *extra: str) -> object:
    return CliRunner().invoke(cli, ["rbac-init", "--home", str(home), *extra])


def test_rbac_init_writes_the_model_and_policy_and_prints_the_policy_lines(tmp_path: Path) -> None:
    result = _init(tmp_path)
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    assert (tmp_path / "rbac_model.conf").read_text().count("[matchers]") == 1
    policy = (tmp_path / "rbac_policy.csv").read_text()
    assert "g, agent_admin, admin" in policy
    assert "g, agent_viewer, viewer" in policy
    assert "rbac:\n  model: rbac_model.conf" in result.output  # type: ignore[attr-defined]


def test_rbac_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    assert _init(tmp_path).exit_code == 0  # type: ignore[attr-defined]
    (tmp_path / "rbac_policy.csv").write_text("p, me, *, *\n")
    assert _init(tmp_path).exit_code == 2  # type: ignore[attr-defined]
    assert (tmp_path / "rbac_policy.csv").read_text() == "p, me, *, *\n"
    assert _init(tmp_path, "--force").exit_code == 0  # type: ignore[attr-defined]


def test_rbac_init_json_and_output_folder(tmp_path: Path) -> None:
    result = _init(tmp_path, "--output", str(tmp_path / "rbac"), "--json")
    out = json.loads(result.output)  # type: ignore[attr-defined]
    assert Path(out["model"]).parent == tmp_path / "rbac"
    assert Path(out["policy"]).exists()


def test_rbac_is_off_without_a_section_and_on_with_true(tmp_path: Path) -> None:
    assert rbac.build({}, Settings(tmp_path)) is None
    assert rbac.build({"rbac": {"enabled": False}}, Settings(tmp_path)) is None
    _init(tmp_path)
    stage = rbac.build({"rbac": True}, Settings(tmp_path))
    assert stage is not None
    assert stage.enforcer is not None
    assert stage.model == tmp_path / "rbac_model.conf"


def test_rbac_paths_are_relative_to_the_policy_file(tmp_path: Path) -> None:
    (tmp_path / "conf").mkdir()
    _init(tmp_path, "--output", str(tmp_path / "conf"))
    stage = rbac.build({"rbac": {"model": "rbac_model.conf", "policy": "rbac_policy.csv"}},
                       Settings(tmp_path / "home", tmp_path / "conf" / "policy.yaml"))
    assert stage is not None
    assert stage.enforcer is not None


def test_a_bad_rbac_section_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown key"):
        rbac.build({"rbac": {"modle": "x"}}, Settings(tmp_path))
    with pytest.raises(ConfigError, match="expected"):
        rbac.build({"rbac": "yes"}, Settings(tmp_path))


def test_missing_rbac_files_make_a_stage_that_denies_everything(tmp_path: Path) -> None:
    stage = rbac.build({"rbac": True}, Settings(tmp_path))
    assert stage is not None
    assert stage.enforcer is None
    assert stage.error is not None
    assert "rbac-init" in stage.error
    assert not stage.allowed("agent_admin", "time", "tool", "get_current_time", None)


def test_the_default_policy_decides_by_role_and_read_only_hint(tmp_path: Path) -> None:
    _init(tmp_path)
    stage = rbac.build({"rbac": True}, Settings(tmp_path))
    assert stage is not None
    read_only = {"annotations": {"readOnlyHint": True}}
    assert stage.allowed("agent_admin", "fs", "tool", "write_file", None)
    assert stage.allowed("agent_viewer", "fs", "tool", "read_file", read_only)
    assert not stage.allowed("agent_viewer", "fs", "tool", "write_file", {"annotations": {"readOnlyHint": False}})
    assert stage.allowed("agent_viewer", "docs", "resource", "demo://doc/1", None)
    assert stage.allowed("agent_viewer", "docs", "prompt", "summary", None)
    assert not stage.allowed("unknown_agent", "fs", "tool", "read_file", read_only)


def test_rbac_objects_are_qualified_names_or_bare_names(tmp_path: Path) -> None:
    _init(tmp_path)
    (tmp_path / "rbac_policy.csv").write_text("p, ops, fs__*, execute\np, ops, get_current_time, execute\n")
    stage = rbac.build({"rbac": True}, Settings(tmp_path))
    assert stage is not None
    assert stage.allowed("ops", "fs", "tool", "read_file", None)
    assert stage.allowed("ops", "time", "tool", "get_current_time", None)
    assert not stage.allowed("ops", "time", "tool", "convert_time", None)
    # a server cannot borrow another's prefix: fs__x on server "fsx" is fsx__x
    assert not stage.allowed("ops", "fsx", "tool", "read_file", None)


def test_the_rbac_subject_is_the_agent_else_the_client_name_else_the_default(tmp_path: Path) -> None:
    _init(tmp_path)
    stage = rbac.build({"rbac": {"defaultSubject": "anonymous"}}, Settings(tmp_path))
    assert stage is not None
    assert stage.subject(FakeSession(agent="alice", client_name="cursor")) == "alice"
    assert stage.subject(FakeSession(client_name="cursor")) == "client:cursor"
    assert stage.subject(FakeSession()) == "anonymous"


def test_pins_and_poisoning_are_on_by_default_and_can_be_switched_off() -> None:
    assert isinstance(pins.build({}), pins.PinStage)
    assert pins.build({"stages": {"pins": {"enabled": False}}}) is None
    assert isinstance(poisoning.build({}), poisoning.PoisoningStage)
    assert poisoning.build({"stages": {"poisoning": False}}) is None


@pytest.mark.parametrize(("section", "message"), [
    ({"pins": {"onChange": "explode"}}, "onChange"),
    ({"pins": {"onNew": "maybe"}}, "onNew"),
    ({"pins": {"onchange": "warn"}}, "unknown key"),
    ({"poisoning": {"actions": {"hidden_instructions": "nuke"}}}, "hidden_instructions"),
    ({"poisoning": {"actions": {"made_up": "warn"}}}, "unknown finding kind"),
    ({"poisoning": {"results": "shred"}}, "results"),
    ({"poisoning": {"trusted": ["no-slash"]}}, "trusted"),
    ({"poisoning": {"bogus": 1}}, "unknown key"),
])
def test_bad_stage_sections_fail_at_startup_naming_the_key(section: dict[str, object], message: str) -> None:
    factory = pins.build if "pins" in section else poisoning.build
    with pytest.raises(ConfigError, match=message):
        factory({"stages": section})


def test_per_severity_actions_are_accepted() -> None:
    stage = poisoning.build({"stages": {"poisoning": {"actions": {"lookalike_name": {"high": "ask"}}}}})
    assert stage is not None
    assert stage.config.actions["lookalike_name"] == {"high": "ask"}
