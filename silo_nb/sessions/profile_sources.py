"""Where agent profiles come from, and how the files merge: the site's under the user's, per id.

The merge rule (lowest first, a later entry replacing an earlier one of the same id whole, fields not
merged):

1. the built-in ``demo``;
2. the *site* files: ``silo/profiles.toml`` then ``silo/profiles.json`` in every Jupyter config folder that
   is not the user's — ``/etc/jupyter``, ``/usr/local/etc/jupyter``, ``<sys-prefix>/etc/jupyter``, the
   folders of ``$JUPYTER_CONFIG_PATH`` — most general first, in Jupyter's own order among themselves;
3. the *user's* files: in ``jupyter_config_dir()`` (``$JUPYTER_CONFIG_DIR`` or ``~/.jupyter``, where
   ``%silo add-profile`` writes), below it the Python user base's ``etc/jupyter``;
4. the file ``$SILO_NB_PROFILES``, if set.

Jupyter itself puts ``<sys-prefix>/etc/jupyter`` *before* the user's folder in a virtual or conda
environment the user owns (``JUPYTER_PREFER_ENV_PATH``) and ``$JUPYTER_CONFIG_PATH`` before everything:
for profiles that would let a site file shadow the user's own entries, so the user's folders are always
moved above the site's. Given folders (``config_dirs``, most specific first), the first is the user's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["BUILT_IN", "ProfileOrigin", "ProfileSource", "merge_lines", "profile_sources"]

FILE_NAMES = ("profiles.toml", "profiles.json")  # in one folder the JSON file wins: it is read second


@dataclass(frozen=True)
class ProfileSource:
    """One profiles file and its place in the merge: ``site``, ``user``, ``SILO_NB_PROFILES``, ``built-in``
    (the demo: no file) or ``file`` (a path handed to ``load_profiles`` as is)."""

    path: Path | None
    scope: str

    def __str__(self) -> str:
        return "built in" if self.path is None else f"{self.scope} {self.path}"

    def entry_name(self) -> str:
        """How a problem line names an entry read from here: "the site's entry (PATH)"."""
        if self.path is None:
            return "the built-in entry"
        owner = {"site": "the site's entry", "user": "your entry"}.get(self.scope, "the entry")
        return f"{owner} ({self.path})"


BUILT_IN = ProfileSource(None, "built-in")


@dataclass(frozen=True)
class ProfileOrigin:
    """Where a loaded profile's entry was read, and the lower entries of the same id it replaces."""

    source: ProfileSource
    overrides: tuple[ProfileSource, ...] = field(default=())

    def __str__(self) -> str:
        replaced = ", ".join(str(s) for s in self.overrides)
        return f"{self.source} — replaces {replaced}" if replaced else str(self.source)


def _key(folder: str | os.PathLike[str]) -> str:
    return os.path.normcase(os.path.abspath(os.path.expanduser(os.fspath(folder))))


def _jupyter_folders() -> tuple[list[str], set[str]]:
    """Jupyter's config folders (most specific first) and which of them are the user's."""
    import site

    from jupyter_core.paths import jupyter_config_dir, jupyter_config_path

    user = {_key(jupyter_config_dir())}
    if site.ENABLE_USER_SITE:
        base = site.getuserbase() if hasattr(site, "getuserbase") else site.USER_BASE
        if base:
            user.add(_key(Path(base, "etc", "jupyter")))
    return jupyter_config_path(), user


def profile_sources(config_dirs: Iterable[str | os.PathLike[str]] | None = None) -> list[ProfileSource]:
    """The profiles files that exist, lowest precedence first (the module's merge rule)."""
    if config_dirs is None:
        folders, user = _jupyter_folders()
    else:
        folders = [os.fspath(d) for d in config_dirs]
        user = {_key(folders[0])} if folders else set()
    seen: set[str] = set()
    site_folders: list[str] = []
    user_folders: list[str] = []
    for folder in folders:
        key = _key(folder)
        if key not in seen:  # a folder named twice (JUPYTER_CONFIG_PATH=~/.jupyter) is read once
            seen.add(key)
            (user_folders if key in user else site_folders).append(folder)
    sources: list[ProfileSource] = []
    for scope, group in (("site", site_folders), ("user", user_folders)):
        for folder in reversed(group):
            for name in FILE_NAMES:
                candidate = Path(folder) / "silo" / name
                if candidate.is_file():
                    sources.append(ProfileSource(candidate, scope))
    override = os.environ.get("SILO_NB_PROFILES")
    if override:
        sources.append(ProfileSource(Path(override).expanduser(), "SILO_NB_PROFILES"))
    return sources


def merge_lines(
    sources: Sequence[ProfileSource],
    origins: Mapping[str, ProfileOrigin],
    problems: Sequence[str],
    user_file: Path | None,
) -> list[str]:
    """The merge in words (``%silo doctor`` with no profile): the files lowest first, each profile's file
    and the entries it replaces, then what was skipped."""
    lines = ["Profiles files, lowest precedence first (an entry replaces a lower one of its id whole):"]
    lines += [f"  {s.scope}  {s.path}" for s in sources if s.path is not None]
    if not sources:
        lines.append("  (none: only the built-in demo)")
    if not any(s.scope == "user" for s in sources) and user_file is not None:
        lines.append(f"  (none of yours yet: {user_file}, where %silo add-profile writes)")
    lines.append("Profiles, and the file each is read from:")
    width = max(len(ident) for ident in origins) if origins else 0
    lines += [f"  {ident:<{width}}  {origin}" for ident, origin in origins.items()]
    lines += [f"  skipped: {problem}" for problem in problems]
    return lines
