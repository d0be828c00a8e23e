"""In-process widget testing: a comm that records every message, and the frontend's exact messages.

``ipywidgets`` (≥ 8.1, with ipykernel ≥ 6.18) creates comms through ``comm.create_comm``, looked up at
call time, so patching it with :class:`RecordingComm` captures every ``comm_open``, ``comm_msg`` and
``comm_close`` without a kernel. The ``frontend_*`` helpers feed ``Widget._handle_msg`` the messages the
ipywidgets 8 frontend sends (the ``buffers`` key is required).
"""

from __future__ import annotations

from typing import Any

import comm.base_comm

Sent = tuple[str, str, dict[str, Any] | None]


class RecordingComm(comm.base_comm.BaseComm):
    """A comm whose messages go to ``RecordingComm.sent`` instead of a kernel's IOPub."""

    sent: list[Sent] = []  # noqa: RUF012 - shared on purpose: one recording per test (reset by the fixture)

    def publish_msg(
        self,
        msg_type: str,
        data: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        buffers: list[bytes] | None = None,
        **keys: Any,
    ) -> None:
        RecordingComm.sent.append((msg_type, self.comm_id, data))


def frontend_click(button: Any) -> None:
    """What the browser sends when a ``Button`` is clicked."""
    button._handle_msg(
        {"content": {"data": {"method": "custom", "content": {"event": "click"}}}, "buffers": []}
    )


def frontend_update(widget: Any, **state: Any) -> None:
    """What the browser sends when the user changes a widget (e.g. ``index`` for a ``Dropdown``)."""
    widget._handle_msg(
        {"content": {"data": {"method": "update", "state": state, "buffer_paths": []}}, "buffers": []}
    )


def state_updates(sent: list[Sent], widget: Any, key: str) -> list[Any]:
    """The values of ``key`` the kernel sent to the frontend for ``widget``, in order."""
    return [
        data["state"][key]
        for msg_type, comm_id, data in sent
        if msg_type == "comm_msg"
        and comm_id == widget.model_id
        and data is not None
        and data.get("method") == "update"
        and key in data.get("state", {})
    ]


def closed_comms(sent: list[Sent]) -> set[str]:
    return {comm_id for msg_type, comm_id, _data in sent if msg_type == "comm_close"}


def opened_comms(sent: list[Sent]) -> set[str]:
    return {comm_id for msg_type, comm_id, _data in sent if msg_type == "comm_open"}


def tree_ids(widget: Any) -> set[str]:
    """The comm ids of ``widget`` and every widget below it (Box children, Layouts and styles too)."""
    ids = {widget.model_id}
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None)):
        if part is not None:
            ids.add(part.model_id)
    for child in getattr(widget, "children", ()) or ():
        ids |= tree_ids(child)
    return ids
