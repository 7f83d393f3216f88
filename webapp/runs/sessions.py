"""A session's tree as people follow it: which call started which subagent, and from a
subagent back to the step of its session that started it.

A subagent is matched to the call that started it by its task: the call's ``prompt``
argument (Claude Code's ``Task``, later named ``Agent``; Deep Agents' ``task``) is the
first thing the subagent was told. Only runs of the same collection the person may see
are linked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q

from webapp.models import Message, Run
from webapp.runs.reads import visible_runs

SPAWN_TOOLS = ("Task", "Agent", "task")
"""Tools whose call starts a subagent."""


@dataclass(frozen=True, slots=True)
class StartedBy:
    """The session run, and the step (and message) of its call that started a subagent."""

    run: Run
    step: int
    message: int


def _prompt(part: dict[str, Any]) -> str:
    """The task a spawning call gave its subagent, or ""."""
    if part.get("type") != "tool_call" or part.get("name") not in SPAWN_TOOLS:
        return ""
    arguments = part.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            return ""
    prompt = arguments.get("prompt") if isinstance(arguments, dict) else None
    return prompt.strip() if isinstance(prompt, str) else ""


def _first_task(run: Run) -> str:
    """What the run was first told (its first user message's text)."""
    first = Message.objects.filter(run=run, role="user").order_by("index").first()
    if first is None:
        return ""
    return "\n\n".join(
        str(p.get("text", "")) for p in first.parts if p.get("type") == "text"
    ).strip()


def subagent_prompts(user: User | AnonymousUser, run: Run) -> dict[str, Run]:
    """The run's subagents this person may see, by the task each was given."""
    if run.collection_id is None or not run.session_id:
        return {}
    subagents = visible_runs(user).filter(
        collection_id=run.collection_id, parent_session_id=run.session_id, subagent=True
    )
    return {task: sub for sub in subagents if (task := _first_task(sub))}


def spawned(parts: list[dict[str, Any]], prompts: dict[str, Run]) -> list[Run]:
    """The subagents the calls among `parts` started."""
    return [prompts[t] for p in parts if (t := _prompt(p)) and t in prompts]


def started_by(user: User | AnonymousUser, run: Run) -> StartedBy | None:
    """For a subagent: its session's run and the step whose call started it, if the
    person may see them and the call is in the log."""
    if not run.subagent or run.collection_id is None or not run.parent_session_id:
        return None
    parent = (
        visible_runs(user)
        .filter(collection_id=run.collection_id, session_id=run.parent_session_id, subagent=False)
        .first()
    )
    task = _first_task(run)
    if parent is None or not task:
        return None
    named = Q()
    for tool in SPAWN_TOOLS:
        named |= Q(tool_names__contains=tool)
    calls = Message.objects.filter(named, run=parent, role="assistant").order_by("index")
    for message in calls.only("index", "parts"):
        if any(_prompt(p) == task for p in message.parts):
            step = Message.objects.filter(run=parent, role="assistant", index__lt=message.index)
            return StartedBy(parent, step.count(), message.index)
    return None


def spawned_by_message(
    user: User | AnonymousUser, run: Run, items: list[Any], response: int | None
) -> dict[int, list[Run]]:
    """For the inspector's page of `items` and the step's `response` (a message index):
    the subagents each shown message's calls started, by message index."""
    prompts = subagent_prompts(user, run)
    wanted = [i.index for i in items if i.index is not None and i.kind == "tool_call"]
    if response is not None:
        wanted.append(response)
    if not prompts or not wanted:
        return {}
    rows = Message.objects.filter(run=run, index__in=wanted).values_list("index", "parts")
    found = {index: spawned(parts, prompts) for index, parts in rows}
    return {index: runs for index, runs in found.items() if runs}


@dataclass(frozen=True, slots=True)
class TreeNode:
    """One run of a collection's tree: its depth (0 for a session's own run) and, for a
    subagent, the step that started it."""

    run: Run
    depth: int
    started: StartedBy | None


def session_tree(user: User | AnonymousUser, members: list[Run]) -> list[TreeNode]:
    """The collection's runs as a tree, depth first: each session's run, then the runs
    it started (by parent session id), in the order they were stored."""
    children: dict[str, list[Run]] = {}
    ids = {r.session_id for r in members if r.session_id}
    roots = []
    for run in sorted(members, key=lambda r: r.pk):
        parent = run.parent_session_id
        if parent and parent in ids and parent != run.session_id:
            children.setdefault(parent, []).append(run)
        else:
            roots.append(run)
    out: list[TreeNode] = []

    def visit(run: Run, depth: int) -> None:
        out.append(TreeNode(run, depth, started_by(user, run) if depth else None))
        for child in children.pop(run.session_id, []) if run.session_id else []:
            visit(child, depth + 1)

    for root in roots:
        visit(root, 0)
    return out


def start_steps(tree: list[TreeNode]) -> dict[int, int]:
    """Per run of a session tree (by pk), the step of its session's main run at which
    it began: 0 for a root, its parent's start plus the step whose call started it for
    a subagent (0 more when the call is not in the log)."""
    starts: dict[int, int] = {}
    for node in tree:
        began = node.started
        if began is None:
            starts[node.run.pk] = 0
        else:
            starts[node.run.pk] = starts.get(began.run.pk, 0) + began.step
    return starts
