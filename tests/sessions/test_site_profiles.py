"""Shared servers (issue 34): a site-wide profiles file (``<sys-prefix>/etc/jupyter/silo/profiles.toml``,
``/etc/jupyter``, ``$JUPYTER_CONFIG_PATH``'s folders) merged *under* the user's, per profile id, and the
merge shown (which file each profile came from, which site entries the user's replace)."""

from __future__ import annotations

import logging
import site
from pathlib import Path

import pytest
from jupyter_core import paths as jupyter_paths

from silo_nb.sessions.profile_sources import ProfileSource, profile_sources
from silo_nb.sessions.profile_writer import add_profile
from silo_nb.sessions.profiles import AgentProfilesService, load_profiles
from tests.support.profiles import toml_profile, write_toml


@pytest.fixture(autouse=True)
def _no_profiles_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SILO_NB_PROFILES", raising=False)


@pytest.fixture
def jupyter_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """(user, env, system) config folders standing in for ~/.jupyter, <sys-prefix>/etc/jupyter and
    /etc/jupyter, with Jupyter putting the environment's folder first, as it does in a venv or conda
    env the user owns (``JUPYTER_PREFER_ENV_PATH``)."""
    user, env, system = tmp_path / "home-jupyter", tmp_path / "sys-prefix-etc", tmp_path / "etc-jupyter"
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(user))
    monkeypatch.setenv("JUPYTER_PREFER_ENV_PATH", "1")
    for name in ("JUPYTER_CONFIG_PATH", "JUPYTER_NO_CONFIG", "SILO_NB_PROFILES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(jupyter_paths, "ENV_CONFIG_PATH", [str(env)])
    monkeypatch.setattr(jupyter_paths, "SYSTEM_CONFIG_PATH", [str(system)])
    monkeypatch.setattr(site, "ENABLE_USER_SITE", False)
    return user, env, system


def test_the_users_entry_wins_over_the_sys_prefix_one_where_jupyter_puts_the_env_first(
    jupyter_dirs: tuple[Path, Path, Path],
) -> None:
    user, env, system = jupyter_dirs
    assert jupyter_paths.jupyter_config_path()[0] == str(env)  # Jupyter's own order: the env first
    write_toml(system, toml_profile("team", label="System") + toml_profile("system-only"))
    site_file = write_toml(env, toml_profile("team", label="Site", command="site-bin") + toml_profile("lab"))
    user_file = write_toml(user, toml_profile("team", label="Mine", command="my-bin"))
    service = AgentProfilesService()
    team = service.get("team")
    assert team is not None and (team.label, team.command) == ("Mine", "my-bin")
    assert {s.id for s in service.list()} == {"demo", "team", "lab", "system-only"}
    origin = service.origin("team")
    assert origin is not None
    assert origin.source == ProfileSource(user_file, "user")
    assert [o.path for o in origin.overrides] == [system / "silo" / "profiles.toml", site_file]
    lab = service.origin("lab")
    assert lab is not None and lab.source == ProfileSource(site_file, "site") and lab.overrides == ()


def test_jupyter_config_path_folders_are_site_folders_under_the_users(
    jupyter_dirs: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, _, _ = jupyter_dirs
    admin = tmp_path / "admin-config"
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(admin))  # Jupyter reads it before everything else
    write_toml(admin, toml_profile("team", label="Admin"))
    write_toml(user, toml_profile("team", label="Mine"))
    team = AgentProfilesService().get("team")
    assert team is not None and team.label == "Mine"


def test_sources_are_site_then_user_then_the_env_file(
    jupyter_dirs: tuple[Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, env, system = jupyter_dirs
    files = [write_toml(folder, "") for folder in (user, env, system)]
    mine = tmp_path / "mine.toml"
    monkeypatch.setenv("SILO_NB_PROFILES", str(mine))
    assert profile_sources() == [
        ProfileSource(files[2], "site"),
        ProfileSource(files[1], "site"),
        ProfileSource(files[0], "user"),
        ProfileSource(mine, "SILO_NB_PROFILES"),
    ]
    # Given folders (most specific first): the first is the user's, as user_file() writes there.
    assert [s.scope for s in profile_sources([user, env])] == ["site", "user", "SILO_NB_PROFILES"]


def test_a_folder_named_twice_is_read_once_as_the_users(
    jupyter_dirs: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    user, _, _ = jupyter_dirs
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", f"{user}/")
    path = write_toml(user, toml_profile("only"))
    assert profile_sources() == [ProfileSource(path, "user")]


def test_a_broken_site_entry_is_one_line_and_the_users_profiles_still_load(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    site_dir, user = tmp_path / "site", tmp_path / "user"
    site_file = write_toml(site_dir, toml_profile("shared", shell="bash") + toml_profile("fine"))
    write_toml(user, toml_profile("mine") + toml_profile("fine", label="Mine"))
    service = AgentProfilesService(config_dirs=[user, site_dir])
    with caplog.at_level(logging.WARNING, logger="silo_nb.profiles"):
        assert {s.id for s in service.list()} == {"demo", "fine", "mine"}
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert f"{site_file}: profile shared: unknown key" in warnings[0]
    fine = service.get("fine")
    assert fine is not None and fine.label == "Mine"


def test_a_broken_site_file_leaves_the_users_profiles(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    site_dir, user = tmp_path / "site", tmp_path / "user"
    write_toml(site_dir, "[[profiles]\nid = ")
    write_toml(user, toml_profile("mine"))
    with caplog.at_level(logging.WARNING, logger="silo_nb.profiles"):
        ids = [s.id for s in AgentProfilesService(config_dirs=[user, site_dir]).list()]
    assert ids == ["demo", "mine"]
    assert len(caplog.records) == 1


def test_a_broken_user_override_keeps_the_site_entry_and_says_so(tmp_path: Path) -> None:
    site_dir, user = tmp_path / "site", tmp_path / "user"
    site_file = write_toml(site_dir, toml_profile("team", label="Site"))
    user_file = write_toml(user, toml_profile("team", lable="Mine"))
    service = AgentProfilesService(config_dirs=[user, site_dir])
    team = service.get("team")
    assert team is not None and team.label == "Site"
    (problem,) = service.problems
    assert problem.startswith(f"{user_file}: profile team: unknown key")
    assert problem.endswith(f"the site's entry ({site_file}) is used meanwhile")


def test_the_merge_report_names_each_profiles_file_and_the_overridden_site_entries(tmp_path: Path) -> None:
    site_dir, user = tmp_path / "site", tmp_path / "user"
    site_file = write_toml(site_dir, toml_profile("team") + toml_profile("lab") + toml_profile("bad", x=1))
    user_file = write_toml(user, toml_profile("team", label="Mine"))
    report = AgentProfilesService(config_dirs=[user, site_dir]).merge_report()
    text = "\n".join(report)
    assert f"site  {site_file}" in text and f"user  {user_file}" in text
    rows = {line.split()[0]: line for line in report if line.startswith("  ") and not line.startswith("   ")}
    assert rows["demo"].endswith("built in")
    assert rows["team"].endswith(f"user {user_file} — replaces site {site_file}")
    assert rows["lab"].endswith(f"site {site_file}")
    assert f"skipped: {site_file}: profile bad" in text


def test_the_merge_report_says_where_the_users_file_goes_when_there_is_none(tmp_path: Path) -> None:
    service = AgentProfilesService(config_dirs=[tmp_path / "user", tmp_path / "site"])
    text = "\n".join(service.merge_report())
    assert "(none: only the built-in demo)" in text
    assert str(tmp_path / "user" / "silo" / "profiles.toml") in text


def test_load_profiles_still_takes_plain_paths(tmp_path: Path) -> None:
    path = write_toml(tmp_path, toml_profile("plain"))
    profiles, problems = load_profiles([path])
    assert list(profiles) == ["demo", "plain"] and problems == []


def test_add_profile_may_replace_a_site_entry_never_one_of_the_users(tmp_path: Path) -> None:
    site_dir, user = tmp_path / "site", tmp_path / "user"
    site_file = write_toml(site_dir, toml_profile("team", label="Site"))
    service = AgentProfilesService(config_dirs=[user, site_dir])
    written = add_profile(service, {"id": "team", "label": "Mine", "command": "my-agent"})
    assert written == user / "silo" / "profiles.toml"
    team, origin = service.get("team"), service.origin("team")
    assert team is not None and team.label == "Mine"
    assert origin is not None and [s.path for s in origin.overrides] == [site_file]
    with pytest.raises(ValueError, match='a profile "team" exists already'):
        add_profile(service, {"id": "team", "command": "again"})
