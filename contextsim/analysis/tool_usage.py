"""What the tools put in the context: the tokens of each tool's results and of its
calls' arguments (and of the tool definitions the log holds) in one request and over
the whole run, with what they cost, by tool and by MCP server, so a person sees which
tool fills the window.

Tokens are the provider's count when the simulation reconciles (the estimator's x the
fitted scale), else the estimator's. A result is counted as it is sent: whole when
kept, as its notes when cleared, as its stub when offloaded, not at all when left out.
A message that holds several tools' results is split evenly between them (the log's
messages are counted whole). A call's arguments (the estimator's count of them, the
message's other text left out) are sent with their message, and not at all when it is
cleared, offloaded or left out. Dollars: each request's tokens at its own price per input
token (contextsim.analysis.impact.input_prices), summed over the run."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from itertools import accumulate, compress, repeat
from operator import add, eq, mul, or_, sub

from contextsim.analysis.impact import input_prices
from contextsim.counting.skeleton import KIND_INDEX
from contextsim.engine.simulate import Simulation
from contextsim.truth.costs import Prices

DEFINITIONS = "(tool definitions)"
"""The row of the tool definitions the log holds (a capture's, an OpenAI log's)."""
UNNAMED = "(unnamed tool)"
"""The row of results whose call the log does not name."""
BUILT_IN = "built-in"
"""The server row of the tools that are not an MCP server's."""


def mcp_server(tool: str) -> str:
    """The MCP server of a tool named the way Claude Code and the Agent SDK name them
    (mcp__<server>__<tool>), else BUILT_IN."""
    if tool.startswith("mcp__") and "__" in tool[5:]:
        return tool[5:].split("__", 1)[0]
    return BUILT_IN


@dataclass(frozen=True, slots=True)
class ToolShare:
    """One tool's (or one server's) part: `messages` holding its results,
    `step_tokens` of its results and calls' arguments in the request asked about,
    `run_tokens` of them sent over every request of the run (`arguments` of which are
    its calls') and their `dollars`."""

    name: str
    server: str
    messages: int
    step_tokens: int
    run_tokens: int
    dollars: float
    calls: int = 0
    arguments: int = 0
    definitions: int = 0
    """Tokens of its definition sent over the run (a capture holds them: split_definitions)."""


DENSE_LIMIT = 20_000_000
"""Messages x tools up to which each tool's positions are ranked in a table (a lookup
per request) rather than by bisection (memory: about 8 bytes each)."""


class _Sums:
    """One tool's messages and prefix sums of what they send kept, and what clearing
    and offloading each saves (estimator tokens, a share of each message)."""

    def __init__(self) -> None:
        self.at: list[int] = []
        self.raw: list[float] = []
        self.clear_save: list[float] = []
        self.off_save: list[float] = []

    def add(self, i: int, raw: float, clear_save: float, off_save: float) -> None:
        self.at.append(i)
        self.raw.append(raw)
        self.clear_save.append(clear_save)
        self.off_save.append(off_save)

    def freeze(self) -> None:
        self.raw = [0.0, *accumulate(self.raw)]
        self.clear_save = [0.0, *accumulate(self.clear_save)]
        self.off_save = [0.0, *accumulate(self.off_save)]

    def per_step(self, points: _Points) -> list[float]:
        """What the tool's messages send at each request (estimator tokens), a column
        at a time: positions are found by C-level maps, once per column of positions,
        and the sums looked up there, not request by request."""
        at = self.at
        if points.size <= DENSE_LIMIT // max(points.tools, 1):
            # The count of its messages before each position, made in C: a lookup each.
            flags = bytearray(points.size + 1)
            for i in at:
                flags[i] = 1
            rank = list(accumulate(flags, initial=0))

            def index(xs: list[int]) -> list[int]:
                return list(map(rank.__getitem__, xs))

        else:

            def index(xs: list[int]) -> list[int]:
                return list(map(bisect_left, repeat(at), xs))

        def look(sums: list[float], found: list[int]) -> list[float]:
            return list(map(sums.__getitem__, found))

        end = index(points.end)
        if points.whole:  # nothing left out anywhere: the history up to each end
            total = look(self.raw, end)
        else:
            gs, ge = index(points.gap_start), index(points.gap_end)
            total = list(
                map(sub, map(add, look(self.raw, gs), look(self.raw, end)), look(self.raw, ge))
            )
        if self.off_save[-1]:
            if points.whole:
                total = list(map(sub, total, look(self.off_save, end)))
            else:
                off = map(
                    sub,
                    map(add, look(self.off_save, gs), look(self.off_save, end)),
                    look(self.off_save, ge),
                )
                total = list(map(sub, total, off))
        if self.clear_save[-1] and points.clears:
            head, tail = index(points.head_clear), index(points.tail_clear)
            middle = look(self.clear_save, ge) if not points.whole else look(self.clear_save, end)
            cleared = map(
                sub, map(add, look(self.clear_save, head), look(self.clear_save, tail)), middle
            )
            total = list(map(sub, total, cleared))
        return total


class _Points:
    """Per request, the message positions its sums are taken at: what it sends is
    [0, gap_start) and [gap_end, end) (the same position twice when nothing is left
    out), cleared up to clear_before in each."""

    def __init__(self, sim: Simulation, tools: int) -> None:
        self.size = sim.skeleton.size
        self.tools = tools
        plans = [r.plan for r in sim.records]
        self.end = [p.end for p in plans]
        gapped = [p.gap_end > p.gap_start for p in plans]
        self.gap_start = [p.gap_start if g else p.end for p, g in zip(plans, gapped, strict=True)]
        self.gap_end = [p.gap_end if g else p.end for p, g in zip(plans, gapped, strict=True)]
        self.head_clear = [
            max(min(s, p.clear_before), 0) for s, p in zip(self.gap_start, plans, strict=True)
        ]
        self.tail_clear = [
            max(min(e, p.clear_before), g)
            for e, g, p in zip(self.end, self.gap_end, plans, strict=True)
        ]
        self.whole = not any(gapped)
        """No request leaves a span out."""
        self.clears = any(p.clear_before for p in plans)
        """Some request clears messages."""


def tool_breakdown(
    sim: Simulation, prices: Prices, step: int | None = None, *, calls: bool = True
) -> list[ToolShare]:
    """Each tool's part of the run (and of request `step` when given), the largest
    over the run first; the tool definitions the log holds are a row of their own.
    Without `calls`, only results and definitions (not the calls' arguments)."""
    sk = sim.skeleton
    acct = sim.accountant
    statics = sim.statics
    tools_kind = KIND_INDEX["tools"]
    sums: dict[tuple[str, bool], _Sums] = {}
    messages: dict[str, int] = {}
    called: dict[str, int] = {}
    cleared = statics.cleared_tokens
    offload = statics.offload_tokens or [0] * sk.size
    clearable, offloaded = acct.clearable, acct.offloaded
    callers = compress(range(len(sk.call_names)), sk.call_names) if calls else iter(())
    for i in callers:
        for name, size in zip(sk.call_names[i], sk.argument_tokens[i], strict=False):
            # Left out with its message when that is cleared or offloaded.
            saved = size if clearable[i] else 0
            sums.setdefault((name, True), _Sums()).add(i, size, saved, size if offloaded[i] else 0)
            called[name] = called.get(name, 0) + 1
    # Only messages with results or definitions are visited (picked in C).
    picked = map(or_, sk.result_count, map(eq, sk.kinds, repeat(tools_kind)))
    for i in compress(range(sk.size), picked):
        if sk.kinds[i] == tools_kind:
            owners = [DEFINITIONS]
        else:
            owners = sk.tool_names[i].split(",") if sk.tool_names[i] else [UNNAMED]
        tokens = sk.tokens[i]
        clear_save = max(tokens - cleared[i], 0) if clearable[i] else 0
        off_save = max(tokens - offload[i], 0) if offloaded[i] else 0
        share = len(owners)
        for name in owners:
            sums.setdefault((name, False), _Sums()).add(
                i, tokens / share, clear_save / share, off_save / share
            )
            messages[name] = messages.get(name, 0) + 1
    if not sums:
        return []
    for s in sums.values():
        s.freeze()
    rec = sim.reconciliation
    scale = rec.scale if rec is not None else 1.0
    per_input = input_prices(sim, prices)
    run_tokens = dict.fromkeys(sums, 0.0)
    dollars: dict[tuple[str, bool], float] = {}
    at_step: dict[tuple[str, bool], float] = {}
    points = _Points(sim, len(sums))
    for key, s in sums.items():
        sent = s.per_step(points)
        run_tokens[key] = scale * sum(sent)
        dollars[key] = scale * sum(map(mul, sent, per_input))
        at_step[key] = scale * sent[step] if step is not None else 0.0

    def both(table: dict[tuple[str, bool], float], name: str) -> float:
        return table.get((name, False), 0.0) + table.get((name, True), 0.0)

    rows = list(dict.fromkeys(name for name, _ in sums))
    shares = [
        ToolShare(
            name,
            "" if name in (DEFINITIONS, UNNAMED) else mcp_server(name),
            messages.get(name, 0),
            round(both(at_step, name)),
            round(both(run_tokens, name)),
            both(dollars, name),
            called.get(name, 0),
            round(run_tokens.get((name, True), 0.0)),
        )
        for name in rows
    ]
    return sorted(shares, key=lambda t: (-t.run_tokens, t.name))


def split_definitions(shares: list[ToolShare], sizes: dict[str, int]) -> list[ToolShare]:
    """The DEFINITIONS row shared out between the tools it defines, in proportion to
    `sizes` (each tool's definition tokens, as the run's estimator counts them): each
    tool's row gains its definition's tokens and dollars (a tool defined and never
    called gets a row of its own). Without sizes, the shares as they are."""
    whole = next((t for t in shares if t.name == DEFINITIONS), None)
    total = sum(sizes.values())
    if whole is None or not total:
        return shares
    rows = {t.name: t for t in shares if t.name != DEFINITIONS}
    for name, size in sizes.items():
        part = size / total
        run_tokens = round(whole.run_tokens * part)
        before = rows.get(name) or ToolShare(name, mcp_server(name), 0, 0, 0, 0.0)
        rows[name] = ToolShare(
            name,
            before.server,
            before.messages,
            before.step_tokens + round(whole.step_tokens * part),
            before.run_tokens + run_tokens,
            before.dollars + whole.dollars * part,
            before.calls,
            before.arguments,
            before.definitions + run_tokens,
        )
    return sorted(rows.values(), key=lambda t: (-t.run_tokens, t.name))


def by_server(shares: list[ToolShare]) -> list[ToolShare]:
    """The tools' parts summed per MCP server (the built-in tools as one row), the
    largest first; the definitions and unnamed rows are left out."""
    found: dict[str, list[ToolShare]] = {}
    for t in shares:
        if t.server:
            found.setdefault(t.server, []).append(t)
    rows = [
        ToolShare(
            server,
            server,
            sum(t.messages for t in ts),
            sum(t.step_tokens for t in ts),
            sum(t.run_tokens for t in ts),
            sum(t.dollars for t in ts),
            sum(t.calls for t in ts),
            sum(t.arguments for t in ts),
            sum(t.definitions for t in ts),
        )
        for server, ts in found.items()
    ]
    return sorted(rows, key=lambda t: (-t.run_tokens, t.name))
