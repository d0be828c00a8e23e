"""``%%prompt --attach``: what was attached shows in the "You" bubble, live and restored alike, and is
recorded with the prompt in the journal (name, type, size — never the content)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

from silo_nb.model.models import ResourceBlock, ResourceLinkBlock, TextBlock
from silo_nb.model.prompt_attachments import PREVIEW_CHARS, PromptAttachment, is_preview, parse_attachments
from silo_nb.notebook.image_attachments import png_of
from silo_nb.notebook.render import transcript_html, transcript_markdown, transcript_text
from silo_nb.notebook.render.labels import ATTACHMENT_ICON_HTML
from silo_nb.sessions.session.prompt_blocks import prompt_line
from silo_nb.updates.transcript import MessageEntry, fold_all
from tests.conftest import Workspace, demo_agent
from tests.support.shell import final_bundle, restart, run, shell  # noqa: F401  (a fixture)

SECRET = "do-not-journal-7f3a"


def test_prompt_line_describes_attachments_without_their_content(tmp_path: pytest.TempPathFactory) -> None:
    linked = tmp_path / "notes-abc.csv"  # type: ignore[operator]
    linked.write_text("a,b\n1,2\n")
    blocks = [
        TextBlock(text="summarise"),
        ResourceBlock(uri="silo:variable/df", mime_type="text/csv", text=f"x,y\n{SECRET},é\n"),
        ResourceLinkBlock(uri=linked.as_uri(), name=linked.name),
        ResourceLinkBlock(uri="https://example.org/data/report.pdf"),
    ]
    line = prompt_line(blocks, 1, "cell-1")
    assert line is not None and line.text == "summarise"
    assert line.raw["cellId"] == "cell-1"
    assert line.raw["attachments"] == [
        {"name": "df", "type": "text/csv", "size": len(f"x,y\n{SECRET},é\n".encode()), "embedded": True,
         "uri": "silo:variable/df"},
        {"name": "notes-abc.csv", "type": "text/csv", "size": 8, "embedded": False, "uri": linked.as_uri()},
        {"name": "report.pdf", "type": "application/pdf", "embedded": False,
         "uri": "https://example.org/data/report.pdf"},
    ]  # fmt: skip
    assert SECRET not in json.dumps(line.to_json())


def test_an_attachment_alone_is_still_a_prompt_and_plain_text_has_no_key() -> None:
    alone = prompt_line([ResourceBlock(uri="silo:variable/v", text="1")], 3, None)
    assert alone is not None and alone.text == "" and alone.raw["attachments"][0]["name"] == "v"
    assert alone.message_id == "silo-journal-user-3"
    plain = prompt_line([TextBlock(text="hi")], 1, None)
    assert plain is not None and plain.raw == {"synthesized": True}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ()),
        ("df", ()),
        ([{"name": ""}, {"size": 3}, 5, {"name": "ok", "size": True, "type": 7, "embedded": False}],
         (PromptAttachment(name="ok", embedded=False),)),
        ([{"name": "df", "type": "text/csv", "size": -1}], (PromptAttachment(name="df", type="text/csv"),)),
    ],
)  # fmt: skip
def test_parse_attachments_is_lenient(value: object, expected: tuple[PromptAttachment, ...]) -> None:
    assert parse_attachments(value) == expected


def test_every_format_shows_the_attachments_in_the_you_bubble() -> None:
    line = prompt_line(
        [
            TextBlock(text="look"),
            ResourceBlock(uri="silo:variable/df", mime_type="text/csv", text="a" * 2048),
        ],
        1,
        None,
    )
    assert line is not None
    state = fold_all([line])
    (entry,) = state.entries
    assert isinstance(entry, MessageEntry) and entry.attachments[0].name == "df"
    html = transcript_html(state)
    bubble = html[html.index('class="silo-user"') :]
    # An SVG paperclip, not a glyph some fonts lack ("⎘" was a missing-glyph box in Chromium).
    assert f"{ATTACHMENT_ICON_HTML} df · text/csv · 2.0 KB" in bubble[: bubble.index("</div></div>")]
    assert "attached: df · text/csv · 2.0 KB" in transcript_markdown(state)
    assert "you> look\n     attached: df · text/csv · 2.0 KB" in transcript_text(state)


async def test_attach_shows_in_the_bubble_live_and_restored_alike(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    workspace.add_profiles(demo_agent("linked", "--no-embedded-context"))
    shell.user_ns["df"] = pd.DataFrame({"city": [SECRET, "Oslo"], "n": [1, 2]})
    for profile in ("demo", "linked"):
        restart(shell, workspace)  # each profile's cell is the first %%prompt run of its kernel
        await run(shell, f"%silo connect {profile}")
        live, result = await run(shell, f"%%prompt --attach df\nsummarise the table ({profile})")
        assert result.success, result.error_in_exec
        live_html = final_bundle(live).data["text/html"]
        shown = re.findall(r'<div class="silo-attachment"[^>]*><svg.*?</svg> ([^<]*)</div>', live_html)
        assert len(shown) == 1 and shown[0].startswith("df · text/csv · "), shown
        assert shown[0].endswith(" B") == (profile == "demo")  # embedded: its size; linked: "· linked"
        handle = shell.user_ns[profile]
        journal = (workspace.data / "workspaces").rglob(f"{handle.session_id}.jsonl")
        lines = [json.loads(line) for path in journal for line in path.read_text().splitlines()]
        (prompt,) = [line for line in lines if line["kind"] == "user_message_chunk"]
        (attached,) = prompt["raw"]["attachments"]
        assert attached["name"] == "df" and attached["type"] == "text/csv" and attached["size"] > 0
        assert SECRET not in json.dumps(prompt)
        restart(shell, workspace)
        await run(shell, f"%silo connect {profile}")
        again, _ = await run(shell, f"%%prompt --attach df\nsummarise the table ({profile})")
        restored = again.outputs[-1]
        assert restored.metadata["silo"]["restored"] is True
        assert (
            re.findall(
                r'<div class="silo-attachment"[^>]*><svg.*?</svg> ([^<]*)</div>', restored.data["text/html"]
            )
            == shown
        )
        assert shown[0] in restored.data["text/markdown"] and shown[0] in restored.data["text/plain"]


async def test_a_figure_is_sent_as_an_image_with_a_thumbnail_live_and_restored_alike(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4, 3), dpi=50)
    fig.add_subplot().plot([1, 3, 2])
    shell.user_ns["fig"] = fig
    (workspace.folder / "plot.png").write_bytes(png_of(fig) or b"")
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    live, result = await run(shell, "%%prompt --attach fig --file plot.png\nwhat do you see?")
    assert result.success, result.error_in_exec
    html = final_bundle(live).data["text/html"]
    thumbs = re.findall(r'<img class="silo-thumbnail" src="(data:image/png;base64,[^"]+)"', html)
    assert len(thumbs) == 2 and all(is_preview(t) for t in thumbs)
    assert "I see 2 attachments: an image (image/png, " in html  # the agent got both images' bytes
    handle = shell.user_ns["demo"]
    journal = next((workspace.data / "workspaces").rglob(f"{handle.session_id}.jsonl"))
    (prompt,) = [json.loads(x) for x in journal.read_text().splitlines() if '"user_message_chunk"' in x]
    attached = prompt["raw"]["attachments"]
    assert [(a["name"], a["type"]) for a in attached] == [("fig", "image/png"), ("plot.png", "image/png")]
    assert len(json.dumps(prompt)) < 2 * PREVIEW_CHARS + 1000  # previews, never the images themselves
    restart(shell, workspace)
    await run(shell, "%silo connect demo")
    again, _ = await run(shell, "%%prompt --attach fig --file plot.png\nwhat do you see?")
    restored = again.outputs[-1]
    assert restored.metadata["silo"]["restored"] is True
    assert re.findall(r'<img class="silo-thumbnail" src="([^"]+)"', restored.data["text/html"]) == thumbs


async def test_an_agent_without_images_is_told_before_anything_is_sent(
    shell: InteractiveShell,  # noqa: F811
    workspace: Workspace,
) -> None:
    from matplotlib.figure import Figure

    workspace.add_profiles(demo_agent("blind", "--no-images"))
    shell.user_ns["fig"] = Figure()
    restart(shell, workspace)
    await run(shell, "%silo connect blind")
    _, result = await run(shell, "%%prompt --attach fig\nlook")
    assert not result.success and "does not accept images" in str(result.error_in_exec)
    assert shell.user_ns["blind"].prompts_sent == 0
