"""``@`` references in a ``%%prompt``: point the agent at a cell, an output, a variable or the figure.

- ``@In[3]`` — that input's source; ``@Out[5]`` — that output (a DataFrame as CSV of its first rows, else
  its text); ``@this`` — the cell above the prompt's (in the open notebook when the kernel has a notebook
  channel, ``silo_nb.server``; else the cell run before it); ``@df`` — a variable of the notebook, sent as
  the kernel tools' ``inspect_variable`` summary (shape, dtypes, head, ``describe()``, nulls: bounded in
  time, none of the variable's own code run beyond its repr); ``@fig`` — the current matplotlib figure,
  as an image.
- The text of the prompt is sent as written; each reference adds one block after it (the same reference
  twice: once), embedded as a ``resource`` (``silo:reference/…``, so the journal and the "You" bubble name
  it ``@df``) when the agent accepts embedded context, else as text.
- ``@name`` that is no variable of the notebook is left alone (an e-mail, a decorator in the prose); an
  explicit one that cannot be filled (``@In[99]``, ``@fig`` with no figure, an image for an agent that
  takes none) is one line that says what to do, and nothing is sent.
- ``%%prompt --error`` also sends the source of the cell that raised (the ``Cell In[n]`` of its traceback).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from silo_nb.kernel_tools import KernelNamespace, KernelTools
from silo_nb.model import AgentSessionInputError
from silo_nb.notebook.attachments import describe_value
from silo_nb.notebook.image_attachments import image_block
from silo_nb.server import NotebookChannel, NotebookUnavailable

__all__ = ["REFERENCE", "cell_above", "error_cell", "reference_blocks", "variable_references"]

REFERENCE = re.compile(r"(?<![\w@.])@(In\[-?\d+\]|Out\[-?\d+\]|this\b|fig\b|[A-Za-z_][A-Za-z0-9_]*)")
_INDEXED = re.compile(r"^(In|Out)\[(-?\d+)\]$")
_ERROR_CELL = re.compile(r"Cell In\[(\d+)\]")
_OUT_CHARS = 20_000


def _indexed(namespace: Mapping[str, Any], kind: str, index: int) -> Any:
    history = namespace.get(kind)
    try:
        return history[index] if history is not None else None
    except (IndexError, KeyError, TypeError):
        return None


def _block(token: str, text: str, *, embedded: bool, mime: str = "text/plain") -> dict[str, Any]:
    if len(text) > _OUT_CHARS:
        text = text[:_OUT_CHARS] + " …(cut)"
    if embedded:
        return {"type": "resource", "uri": f"silo:reference/{token}", "mime_type": mime, "text": text}
    return {"type": "text", "text": f"@{token}:\n{text}"}


async def cell_above(cell_id: str | None) -> str | None:
    """The source of the cell above ``cell_id`` in the open notebook; None when the kernel has no notebook
    channel, the cell is unknown or first, or the server does not answer."""
    channel = NotebookChannel.from_environment()
    if cell_id is None or isinstance(channel, str):
        return None
    try:
        cells = (await channel.request("read"))["cells"]
    except NotebookUnavailable:
        return None
    index = next((i for i, cell in enumerate(cells) if cell.get("id") == cell_id), 0)
    return str(cells[index - 1].get("source", "")) if index > 0 else None


def _filled(namespace: Mapping[str, Any], token: str) -> bool:
    """An implicit reference (``also``) is sent only when there is something to send."""
    indexed = _INDEXED.match(token)
    return indexed is None or _indexed(namespace, indexed.group(1), int(indexed.group(2))) is not None


def error_cell(traceback_text: str) -> str | None:
    """``In[n]`` of the cell a traceback names (``Cell In[5]``), the innermost one; None when none."""
    found = _ERROR_CELL.findall(traceback_text)
    return f"In[{found[-1]}]" if found else None


def variable_references(text: str, namespace: Mapping[str, Any]) -> list[str]:
    """The variables of ``namespace`` that ``text`` names as ``@name`` (each once, in order)."""
    tokens = dict.fromkeys(match.group(1) for match in REFERENCE.finditer(text))
    return [
        token
        for token in tokens
        if token not in ("this", "fig")
        and not _INDEXED.match(token)
        and not token.startswith("_")
        and token in namespace
    ]


def reference_blocks(
    text: str,
    namespace: Mapping[str, Any],
    *,
    embedded: bool,
    images: bool,
    this_source: str | None = None,
    also: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """The blocks for the ``@`` references in ``text`` (see the module docstring), then for ``also``
    (tokens such as ``In[5]`` the caller adds, sent only when filled). ``this_source``: the source of the
    cell above the prompt's, when the notebook is known. ``AgentSessionInputError`` (one line) for one
    that cannot be filled."""
    written = list(dict.fromkeys(match.group(1) for match in REFERENCE.finditer(text)))
    added = [token for token in also if token not in written and _filled(namespace, token)]
    tokens = [*written, *added]
    user_ns = namespace if isinstance(namespace, dict) else dict(namespace)
    tools = KernelTools(KernelNamespace(user_ns), run_code_timeout=1.0)
    blocks: list[dict[str, Any]] = []
    for token in tokens:
        indexed = _INDEXED.match(token)
        if indexed:
            kind, index = indexed.group(1), int(indexed.group(2))
            value = _indexed(namespace, kind, index)
            if value is None:
                raise AgentSessionInputError(f"@{token}: there is no {kind}[{index}] in this kernel yet.")
            body, mime, _suffix = describe_value(f"{kind}[{index}]", value)  # as --attach sends it
            blocks.append(_block(token, body, embedded=embedded, mime=mime))
        elif token == "this":
            source = this_source if this_source is not None else _indexed(namespace, "In", -2)
            if not isinstance(source, str):
                raise AgentSessionInputError("@this: there is no cell above this one yet.")
            blocks.append(_block(token, source, embedded=embedded))
        elif token == "fig":
            outcome = tools.read("show_figure", {})
            if not outcome.images:
                raise AgentSessionInputError(
                    "@fig: no figure is open (inline figures close when their cell ends): keep it in a "
                    "variable and use @NAME, or --attach NAME."
                )
            if not images:
                raise AgentSessionInputError("@fig: this agent takes no images (its promptCapabilities).")
            blocks.append(image_block(outcome.images[0], "image/png", "@fig"))
        elif token in namespace and not token.startswith("_"):
            outcome = tools.read("inspect_variable", {"name": token, "rows": 5})
            blocks.append(_block(token, outcome.text, embedded=embedded))
    return blocks
