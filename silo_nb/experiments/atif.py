"""Trajectories in the standard format: a session journal → an ATIF trajectory (Harbor's Agent Trajectory
Interchange Format, ``ATIF-v1.8``: the newest version Harbor's own models accept, harbor 0.26).

- Steps, ``step_id`` from 1: a ``user`` step per prompt (the turn's leading user chunks), then an ``agent``
  step for the turn (the journal's splitter, ``updates.split_turns``; work the agent did after a turn
  ended is an agent step of its own, ``extra.agent_initiated``). An agent step has the reply
  (``message``), the thought chunks (``reasoning_content``), its ``tool_calls`` (one per ACP
  ``toolCallId``, its updates merged; ``function_name`` is the call's ``kind``, its title in ``extra``;
  ``arguments`` its ``rawInput``) with an ``observation`` result each (the call's final content — text,
  an edit as ``path`` + new text, a terminal by id — else its ``rawOutput``; the status in ``extra``),
  kernel tool calls (``kernel_tool`` lines) likewise, and ``metrics`` from the turn's ``turn_end`` usage
  (``prompt_tokens`` = ACP ``inputTokens``, ``completion_tokens`` = ``outputTokens``, ``cached_tokens`` =
  ``cachedReadTokens``, the others in ``metrics.extra``; ``cost_usd``: the turn's share of the
  ``usage_update`` running cost, when in USD). The turn's stop reason, error and duration are the step's
  ``extra``. ``final_metrics`` sums what is known (a total is left out when no step had it).
- Subagents (ACP v1.25: updates with ``child_session_id``) are ``subagent_trajectories``, one per child
  session (``trajectory_id`` = its session id), an agent step per parent step it worked in; the parent's
  step points at it with an observation result's ``subagent_trajectory_ref``.
- Bounded and deterministic: every text (message, reasoning, observation content, an argument dict's JSON)
  is cut at ``TEXT_LIMIT`` characters with a marker saying how much was left out; nothing is invented —
  timestamps are the journal's, ids the journal's, order the journal's.
- A journal with no step (nothing was prompted or done) has no trajectory: ``trajectory`` raises
  ``ValueError``, ``export_trajectories`` skips it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from silo_nb.model import (
    USER_PROMPT_KIND,
    AgentSessionUpdate,
    AgentToolCall,
    KernelToolLine,
    PermissionDecisionLine,
    TurnEndLine,
)
from silo_nb.updates import SessionFacts, split_turns
from silo_nb.version import VERSION

__all__ = ["SCHEMA_VERSION", "TEXT_LIMIT", "export_trajectories", "trajectory", "write_trajectory"]

SCHEMA_VERSION = "ATIF-v1.8"
TEXT_LIMIT = 100_000  # characters of one text field; the rest is left out, with a marker
FORMATS = ("atif",)


def _cut(text: str) -> str:
    if len(text) <= TEXT_LIMIT:
        return text
    return text[:TEXT_LIMIT] + f"\n… [{len(text) - TEXT_LIMIT:,} characters left out]"


def _timestamp(value: str | None) -> str | None:
    """The journal's timestamp when it is ISO 8601 (ATIF asks for it), else none."""
    if not value:
        return None
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value


def _arguments(raw_input: Any) -> dict[str, Any]:
    if raw_input is None:
        return {}
    value = raw_input if isinstance(raw_input, Mapping) else {"input": raw_input}
    text = json.dumps(value, default=str, ensure_ascii=False)
    if len(text) > TEXT_LIMIT:
        return {"truncated_json": _cut(text)}
    plain: dict[str, Any] = json.loads(text)  # plain JSON values only
    return plain


@dataclass
class _Call:
    """One tool call, its updates merged (absent fields mean unchanged)."""

    call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: tuple[Any, ...] | None = None
    raw_input: Any = None
    raw_output: Any = None
    function: str | None = None  # a kernel tool's own name
    output: str | None = None  # a kernel tool's output
    permission: str | None = None  # the chosen permission option's kind

    def merge(self, call: AgentToolCall) -> None:
        for name in ("title", "kind", "status", "content", "raw_input", "raw_output"):
            value = getattr(call, name)
            if value is not None:
                setattr(self, name, value)

    def tool_call(self) -> dict[str, Any]:
        extra = {
            key: value
            for key, value in (("title", self.title), ("kind", self.kind), ("permission", self.permission))
            if value
        }
        entry: dict[str, Any] = {
            "tool_call_id": self.call_id,
            "function_name": self.function or self.kind or "other",
            "arguments": _arguments(self.raw_input),
        }
        if extra:
            entry["extra"] = extra
        return entry

    def result(self) -> dict[str, Any]:
        parts: list[str] = []
        if self.output:
            parts.append(self.output)
        for item in self.content or ():
            if item.type == "content" and item.content is not None and item.content.text:
                parts.append(item.content.text)
            elif item.type == "diff":
                verb = "created" if item.old_text is None else "edited"
                parts.append(f"{verb} {item.path}\n{item.new_text or ''}")
            elif item.type == "terminal":
                parts.append(f"[terminal {item.terminal_id}]")
        if not parts and self.raw_output is not None:
            output = self.raw_output
            parts.append(
                output if isinstance(output, str) else json.dumps(output, default=str, ensure_ascii=False)
            )
        result: dict[str, Any] = {"source_call_id": self.call_id, "content": _cut("\n".join(parts))}
        if self.status:
            result["extra"] = {"status": self.status}
        return result


@dataclass
class _Part:
    """What one agent step gathers."""

    timestamp: str | None = None
    text: list[str] = field(default_factory=list)
    thought: list[str] = field(default_factory=list)
    calls: dict[str, _Call] = field(default_factory=dict)
    decisions: dict[str, str] = field(default_factory=dict)  # tool call id -> chosen option kind
    end: TurnEndLine | None = None
    cost_total: float | None = None  # the last usage_update's running cost, in USD
    children: list[str] = field(default_factory=list)  # child sessions that worked in this part

    def fold(self, update: AgentSessionUpdate) -> None:
        self.timestamp = self.timestamp or _timestamp(update.timestamp)
        kind = update.kind
        if kind == "agent_message_chunk" and update.text:
            self.text.append(update.text)
        elif kind == "agent_thought_chunk" and update.text:
            self.thought.append(update.text)
        elif kind in ("tool_call", "tool_call_update") and update.tool_call is not None:
            call_id = update.tool_call.tool_call_id
            self.calls.setdefault(call_id, _Call(call_id)).merge(update.tool_call)
        elif (line := KernelToolLine.read(update)) is not None and line.call_id:
            call = self.calls.setdefault(line.call_id, _Call(line.call_id, kind="kernel"))
            call.function = line.tool or call.function
            call.raw_input = line.arguments if line.arguments is not None else call.raw_input
            call.status = line.status or call.status
            call.title = line.title or call.title
            call.output = line.output if line.output is not None else call.output
        elif (decision := PermissionDecisionLine.read(update)) is not None and decision.tool_call_id:
            self.decisions[decision.tool_call_id] = decision.chosen_kind() or "cancelled"
        elif (end := TurnEndLine.read(update)) is not None:
            self.end = self.end or end
        elif kind == "usage_update" and update.usage is not None and (cost := update.usage.cost) is not None:
            self.cost_total = float(cost.amount) if cost.currency.upper() == "USD" else self.cost_total

    def step(self, step_id: int, *, cost: float | None, agent_initiated: bool) -> dict[str, Any]:
        for call_id, chosen in self.decisions.items():
            if call_id in self.calls:
                self.calls[call_id].permission = chosen
        step: dict[str, Any] = {"step_id": step_id, "source": "agent"}
        if self.timestamp:
            step["timestamp"] = self.timestamp
        step["message"] = _cut("".join(self.text))
        if self.thought:
            step["reasoning_content"] = _cut("".join(self.thought))
        results: list[dict[str, Any]] = []
        if self.calls:
            step["tool_calls"] = [call.tool_call() for call in self.calls.values()]
            results = [call.result() for call in self.calls.values()]
        results += [
            {"subagent_trajectory_ref": [{"trajectory_id": child, "session_id": child}]}
            for child in self.children
        ]
        if results:
            step["observation"] = {"results": results}
        metrics = _metrics(self.end.usage if self.end else None, cost)
        if metrics:
            step["metrics"] = metrics
        extra: dict[str, Any] = {}
        if self.end is not None:
            for key, value in (
                ("stop_reason", self.end.stop_reason),
                ("outcome", self.end.outcome),
                ("error", self.end.error),
                ("duration_ms", self.end.duration_ms),
            ):
                if value is not None:
                    extra[key] = value
        if agent_initiated:
            extra["agent_initiated"] = True
        if extra:
            step["extra"] = extra
        return step


def _count(usage: Mapping[str, Any], key: str) -> int | None:
    value = usage.get(key)
    return (
        int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0 else None
    )


def _metrics(usage: Mapping[str, Any] | None, cost: float | None) -> dict[str, Any]:
    metrics: dict[str, Any] = {}
    usage = usage or {}
    for name, key in (
        ("prompt_tokens", "inputTokens"),
        ("completion_tokens", "outputTokens"),
        ("cached_tokens", "cachedReadTokens"),
    ):
        if (count := _count(usage, key)) is not None:
            metrics[name] = count
    if cost is not None:
        metrics["cost_usd"] = cost
    extra = {
        key: count
        for key in ("thoughtTokens", "cachedWriteTokens", "totalTokens")
        if (count := _count(usage, key)) is not None
    }
    if extra:
        metrics["extra"] = extra
    return metrics


def _final_metrics(steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    final: dict[str, Any] = {}
    for total, name in (
        ("total_prompt_tokens", "prompt_tokens"),
        ("total_completion_tokens", "completion_tokens"),
        ("total_cached_tokens", "cached_tokens"),
        ("total_cost_usd", "cost_usd"),
    ):
        known = [step["metrics"][name] for step in steps if name in step.get("metrics", {})]
        if known:
            final[total] = round(sum(known), 9) if name == "cost_usd" else sum(known)
    final["total_steps"] = len(steps)
    return final


def trajectory(
    updates: Iterable[AgentSessionUpdate],
    *,
    session_id: str | None = None,
    agent_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ATIF trajectory of one session's journal (see the module docstring), as a JSON-ready dict.

    ``agent_info``: the agent's ``initialize`` ``agentInfo`` (``name``, ``version``, ``title``) when
    known (a live handle's); else the name comes from the journal's ``turn_end`` lines and the version is
    ``"unknown"``."""
    updates = list(updates)
    facts = SessionFacts()
    steps: list[dict[str, Any]] = []
    children: dict[str, list[tuple[int, AgentSessionUpdate]]] = {}  # child id -> (parent step, update)
    titles: dict[str, str] = {}
    cost_seen: float | None = None
    for journal_turn in split_turns(updates):
        lines = journal_turn.updates
        position = 0
        for start, stop in journal_turn.part_spans():
            for update in lines[position:start]:
                facts.apply(update)
            position = stop
            part_lines = list(lines[start:stop])
            prompted = journal_turn.number is not None and start == 0
            index = 0
            if prompted:
                prompt: list[str] = []
                while index < len(part_lines) and part_lines[index].kind == USER_PROMPT_KIND:
                    prompt.append(part_lines[index].text or "")
                    index += 1
                user: dict[str, Any] = {"step_id": len(steps) + 1, "source": "user"}
                if (stamp := _timestamp(part_lines[0].timestamp)) is not None:
                    user["timestamp"] = stamp
                user["message"] = _cut("".join(prompt))
                steps.append(user)
            part = _Part()
            for update in part_lines[index:]:
                facts.apply(update)
                child, title = update.raw.get("sessionId"), update.raw.get("title")
                if (
                    update.kind == "subagent_update"
                    and isinstance(child, str)
                    and isinstance(title, str)
                    and title
                ):
                    titles.setdefault(child, title)
                if update.child_session_id is not None:
                    child_lines = children.setdefault(update.child_session_id, [])
                    if update.child_session_id not in part.children:
                        part.children.append(update.child_session_id)
                    child_lines.append((len(steps) + 1, update))
                    continue
                part.fold(update)
            cost = None
            if part.cost_total is not None:
                cost = round(part.cost_total - (cost_seen or 0.0), 9)
                cost_seen = part.cost_total
            steps.append(part.step(len(steps) + 1, cost=cost, agent_initiated=not prompted))
        for update in lines[position:]:
            facts.apply(update)
    if not steps:
        raise ValueError("the journal has no prompt and no agent work: no trajectory to write.")
    info = agent_info or {}
    name = info.get("name") or info.get("title") or facts.agent or facts.profile or "unknown"
    version = info.get("version") or _journal_version(updates) or "unknown"
    agent: dict[str, Any] = {"name": str(name), "version": str(version)}
    model = facts.config.get("model")
    if isinstance(model, str) and model:
        agent["model_name"] = model
    agent_extra = {
        key: value for key, value in (("profile", facts.profile), ("title", info.get("title"))) if value
    }
    if agent_extra:
        agent["extra"] = agent_extra
    result: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
    if session_id:
        result["session_id"] = session_id
    result["agent"] = agent
    result["steps"] = steps
    result["final_metrics"] = _final_metrics(steps)
    result["extra"] = {"producer": f"silo_nb {VERSION}"}
    if children:
        result["subagent_trajectories"] = [
            _subagent(child, lines, titles.get(child), agent) for child, lines in children.items()
        ]
    return result


def _journal_version(updates: Sequence[AgentSessionUpdate]) -> str | None:
    """An agent version a ``turn_end`` line recorded (``agentVersion``), if any did."""
    for update in updates:
        end = TurnEndLine.read(update)
        if end is not None and isinstance(version := (end.model_extra or {}).get("agentVersion"), str):
            return version
    return None


def _subagent(
    child: str, lines: Sequence[tuple[int, AgentSessionUpdate]], title: str | None, parent: Mapping[str, Any]
) -> dict[str, Any]:
    steps: list[dict[str, Any]] = []
    groups: dict[int, _Part] = {}
    for parent_step, update in lines:
        groups.setdefault(parent_step, _Part()).fold(update)
    for parent_step, part in groups.items():
        step = part.step(len(steps) + 1, cost=None, agent_initiated=False)
        step.setdefault("extra", {})["parent_step_id"] = parent_step
        steps.append(step)
    agent = {"name": title or str(parent["name"]), "version": str(parent["version"])}
    return {
        "schema_version": SCHEMA_VERSION,
        "session_id": child,
        "trajectory_id": child,
        "agent": agent,
        "steps": steps,
        "final_metrics": _final_metrics(steps),
    }


# -- export ------------------------------------------------------------------------------------------


def export_trajectories(
    source: Any,
    folder: str | os.PathLike[str],
    format: str = "atif",
    *,
    workspace_id: str | None = None,
) -> list[Path]:
    """Write ``source``'s trajectories under ``folder``; the files written.

    ``source``: a grid run (``run_grid``'s DataFrame, or its folder) — one ``<cell>/trajectory.json`` per
    done cell (a cell whose journal has no step is skipped) —, a :class:`GridRun` (its cell's), a live
    session handle, a ``.jsonl`` journal or a session id of this workspace (``workspace_id=``'s) — one
    ``trajectory.json``."""
    if format not in FORMATS:
        raise ValueError(f"format must be 'atif' — not {format!r}.")
    out = Path(folder).expanduser()
    written: list[Path] = []
    for relative, document in _documents(source, workspace_id):
        path = out / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_trajectory(path, document)
        written.append(path)
    return written


def write_trajectory(path: Path, document: Mapping[str, Any]) -> None:
    """Write one trajectory whole (a new file 0600, as it holds the prompts; a link at ``path`` is
    replaced, never followed: ``sessions.write_named_file``)."""
    from silo_nb.sessions import write_named_file

    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    write_named_file(path, text.encode("utf-8", "backslashreplace"))


def _documents(source: Any, workspace_id: str | None) -> Iterable[tuple[str, dict[str, Any]]]:
    from silo_nb.experiments.grid_run import GridRun
    from silo_nb.experiments.table import RUN_MARKER
    from silo_nb.sessions import (
        data_dir,
        journal_path,
        parse_lines,
        read_lines,
        workspace_folder,
        workspace_id_for,
    )

    attrs = getattr(source, "attrs", None)
    if isinstance(attrs, Mapping) and isinstance(attrs.get("run_folder"), str):
        source = attrs["run_folder"]
    if isinstance(source, GridRun):
        yield f"{source.cell}/trajectory.json", trajectory(source.updates(), session_id=source.cell)
        return
    if hasattr(source, "session_id") and hasattr(source, "journal_updates"):
        info = source.init_result.get("agentInfo") if isinstance(source.init_result, Mapping) else None
        yield (
            "trajectory.json",
            trajectory(
                source.journal_updates(),
                session_id=source.session_id,
                agent_info=info if isinstance(info, Mapping) else None,
            ),
        )
        return
    if not isinstance(source, str | os.PathLike):
        raise TypeError(
            "export_trajectories takes a grid run (its DataFrame or folder), a GridRun, a session handle, "
            f"a journal path or a session id — not {type(source).__name__}."
        )
    text = os.fspath(source)
    path = Path(text).expanduser()
    if (path / RUN_MARKER).is_file():
        yield from _run_documents(path.resolve())
        return
    if path.is_file():
        yield "trajectory.json", trajectory(parse_lines(read_lines(path)), session_id=path.stem)
        return
    if text.endswith(".jsonl") or os.sep in text:
        raise FileNotFoundError(f"No journal or run at {text} — check the path.")
    workspace = workspace_id or workspace_id_for(workspace_folder())
    candidate = journal_path(data_dir(), workspace, text)
    if not candidate.is_file():
        raise FileNotFoundError(f"No journal for session {text!r} in workspace {workspace!r}.")
    yield "trajectory.json", trajectory(parse_lines(read_lines(candidate)), session_id=text)


def _run_documents(path: Path) -> Iterable[tuple[str, dict[str, Any]]]:
    from silo_nb.experiments.run_folder import RunFolder
    from silo_nb.sessions import parse_lines, read_lines

    run = RunFolder.open(path)
    for cell in run.cells:
        name = cell["cell"]
        record = run.record(name)
        if record is None:
            continue
        updates = parse_lines(read_lines(run.journal_path(name), root=run.path))
        try:
            document = trajectory(updates, session_id=str(record.get("session_id") or "") or None)
        except ValueError:
            continue  # a cell that failed before its first prompt: nothing to write
        for key in ("agent_name", "agent_version"):  # what the cell's record says of its agent, if it does
            if isinstance(value := record.get(key), str) and value:
                document["agent"][key.removeprefix("agent_")] = value
        document["extra"].update(run=run.name, cell=name, status=record.get("status"))
        yield f"{name}/trajectory.json", document
