"""Images for ``%%prompt``: ``--attach fig`` (a matplotlib figure, or anything with a PNG repr, such as a
displayed image) and ``--file plot.png`` become image blocks for an agent that accepts images.

- A figure is saved as PNG at its own dpi; a PNG repr (``_repr_png_``) is used as it is; an image file
  is read as it is, up to ``attachments.MAX_FILE_BYTES``.
- Each carries a small preview (at most 96 px, PNG) for the transcript's thumbnail, made with Pillow
  when it is installed (matplotlib brings it); without it the transcript names the image only.
"""

from __future__ import annotations

import base64
import io
import logging
from typing import Any

from silo_nb.model import (
    PREVIEW_CHARS,
)

__all__ = ["PREVIEW_PIXELS", "image_block", "png_of"]

log = logging.getLogger("silo_nb.notebook.attachments")

PREVIEW_PIXELS = 96


def png_of(value: Any) -> bytes | None:
    """The PNG bytes of a figure or of an object with a PNG repr; None for anything else."""
    savefig = getattr(value, "savefig", None)
    if callable(savefig):
        buffer = io.BytesIO()
        savefig(buffer, format="png")
        return buffer.getvalue()
    repr_png = getattr(value, "_repr_png_", None)  # IPython's display protocol (Image, many plot types)
    if callable(repr_png):
        data = repr_png()
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0]
        if isinstance(data, str):
            data = base64.b64decode(data)
        return data if isinstance(data, bytes) else None
    return None


def _preview(data: bytes) -> str | None:
    try:
        from PIL import Image
    except ImportError:
        return None
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.thumbnail((PREVIEW_PIXELS, PREVIEW_PIXELS))
            buffer = io.BytesIO()
            image.convert("RGBA").save(buffer, format="PNG", optimize=True)
    except Exception as exc:  # an image Pillow cannot read: named, not shown
        log.info("no preview for an attached image: %s", exc)
        return None
    uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
    return uri if len(uri) <= PREVIEW_CHARS else None


def image_block(data: bytes, mime_type: str, name: str) -> dict[str, Any]:
    """An ``image`` prompt block for ``data`` (with its preview when one can be made)."""
    block: dict[str, Any] = {
        "type": "image",
        "mime_type": mime_type,
        "data": base64.b64encode(data).decode("ascii"),
        "name": name,
    }
    preview = _preview(data)
    if preview is not None:
        block["preview"] = preview
    return block
