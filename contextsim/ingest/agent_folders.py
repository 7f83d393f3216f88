"""Where agents keep their sessions, and the log files in a folder.

Claude Code: `~/.claude/projects/<project>/<session>.jsonl`, its agents under
`<session>/subagents/` (the folder `CLAUDE_CONFIG_DIR` names instead of `~/.claude`).
Codex: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl` (`CODEX_HOME` instead of
`~/.codex`). Gemini CLI: `~/.gemini/tmp/<project hash>/chats/session-*.json`. Any other
folder given: every log file under it. Nothing here reads a file; nothing is watched
unless asked (these folders are private).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

LOG_SUFFIXES = (".jsonl", ".json", ".traj", ".ndjson")


@dataclass(frozen=True, slots=True)
class Folder:
    """A folder to watch: whose it is (`agent`, "" for one given by hand) and the glob
    patterns of its log files, relative to it."""

    path: Path
    agent: str = ""
    patterns: tuple[str, ...] = tuple(f"**/*{s}" for s in LOG_SUFFIXES)

    def files(self) -> Iterator[Path]:
        """Its log files (hidden ones left out), each once."""
        seen: set[Path] = set()
        for pattern in self.patterns:
            for found in self.path.glob(pattern):
                if found in seen or not found.is_file():
                    continue
                if any(p.startswith(".") for p in found.relative_to(self.path).parts):
                    continue
                seen.add(found)
                yield found


def agent_folders(home: Path, env: Mapping[str, str]) -> list[Folder]:
    """The agents' own folders that exist under `home` (or where `env` says)."""
    claude = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    codex = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    found = [
        Folder(claude / "projects", "claude-code", ("*/*.jsonl", "*/*/subagents/*.jsonl")),
        Folder(codex / "sessions", "codex", ("**/rollout-*.jsonl",)),
        Folder(home / ".gemini" / "tmp", "gemini-cli", ("*/chats/*.json", "*/chats/*.jsonl")),
    ]
    # Resolved: the paths of the files found and of the changes notified then agree.
    return [replace(f, path=f.path.resolve()) for f in found if f.path.is_dir()]


def folders_to_watch(
    given: list[str], home: Path | None = None, env: Mapping[str, str] | None = None
) -> list[Folder]:
    """The folders a watch follows: each one `given` (a path, or the agent folders when
    it is "agents"), else those in CONTEXTSIM_WATCH (separated as PATH is), else the
    agents' own folders. A given folder that does not exist raises ValueError naming it."""
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    asked = given or [p for p in env.get("CONTEXTSIM_WATCH", "").split(os.pathsep) if p]
    if not asked:
        return agent_folders(home, env)
    out: list[Folder] = []
    for item in asked:
        if item == "agents":
            out += agent_folders(home, env)
            continue
        path = Path(item).expanduser().resolve()
        if not path.is_dir():
            raise ValueError(f"{item}: no such folder")
        out.append(Folder(path))
    return out
