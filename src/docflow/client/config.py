"""Where the remote commands find their server and API key.

In order, the first that gives a value wins, for the URL and the key separately:

1. the options `--url` and `--api-key`;
2. the environment: `DOCFLOW_URL` and `DOCFLOW_API_KEY`;
3. a profile of the configuration file, `$DOCFLOW_CONFIG` or else
   `$XDG_CONFIG_HOME/docflow/cli.toml` (`~/.config/docflow/cli.toml`): the one named by
   `--profile`, else by `DOCFLOW_PROFILE`, else by the file's `default_profile`, else `default`.

    default_profile = "prod"

    [profiles.prod]
    url = "https://docflow.example.com"
    api_key = "dfk_..."

The key is never printed; a file holding one should be readable by its owner only.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docflow.client.remote import ClientError


class ConfigError(ClientError):
    """The command cannot know its server or its key."""

    exit_code = 2


@dataclass(frozen=True)
class Remote:
    url: str
    api_key: str
    profile: str | None

    def __repr__(self) -> str:  # never the key
        return f"Remote(url={self.url!r}, profile={self.profile!r})"


def config_path() -> Path:
    explicit = os.environ.get("DOCFLOW_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "docflow" / "cli.toml"


def _read(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read the configuration file {path}: {exc}") from exc


def resolve(url: str | None, api_key: str | None, profile: str | None) -> Remote:
    """The server and key a remote command uses (see the module's docstring)."""
    path = config_path()
    data = _read(path)
    profiles = data.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise ConfigError(f"{path}: `profiles` must be a table of profiles")
    name = profile or os.environ.get("DOCFLOW_PROFILE") or data.get("default_profile")
    chosen: dict[str, Any] = {}
    if name:
        if name not in profiles:
            known = ", ".join(sorted(profiles)) or "none"
            raise ConfigError(f"no profile {name!r} in {path} (profiles: {known})")
        chosen = profiles[name]
    elif isinstance(profiles.get("default"), dict):
        name, chosen = "default", profiles["default"]
    if not isinstance(chosen, dict):
        raise ConfigError(f"{path}: profile {name!r} must be a table")
    found_url = url or os.environ.get("DOCFLOW_URL") or chosen.get("url")
    found_key = api_key or os.environ.get("DOCFLOW_API_KEY") or chosen.get("api_key")
    if not found_url:
        raise ConfigError(
            "no server: set DOCFLOW_URL, pass --url, or name a profile with a url in "
            f"{path} (remote commands work through the HTTP API)"
        )
    if not found_key:
        raise ConfigError(
            "no API key: set DOCFLOW_API_KEY, pass --api-key, or name a profile with an "
            f"api_key in {path}"
        )
    if not str(found_url).startswith(("http://", "https://")):
        raise ConfigError(f"the server URL must start with http:// or https://: {found_url}")
    return Remote(url=str(found_url), api_key=str(found_key), profile=name)
