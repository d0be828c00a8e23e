"""The notebook tests' shared fixture: ``comms``, the widget messages the kernel sends, recorded instead of
sent (``widget_utils.RecordingComm``)."""

from __future__ import annotations

from collections.abc import Iterator

import comm
import pytest

from tests.notebook.widget_utils import RecordingComm, Sent


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Sent]]:
    RecordingComm.sent = []
    monkeypatch.setattr(comm, "create_comm", RecordingComm)
    yield RecordingComm.sent
    RecordingComm.sent = []
