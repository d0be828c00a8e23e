"""``CommandPalette``: the session panel's commands — pick one, give it arguments, run it as a prompt.

- A ``Combobox`` of ``/name`` (free text allowed), an arguments field whose placeholder is the chosen
  command's input hint, Run, and one button per announced command with its description: a click fills
  the field. Run — or Enter in the arguments field (the browser's "submit" event) — calls
  ``on_run("/name args")``; the owner sends it as a prompt turn.
- Only commands the agent announced are run: ``/nosuch`` is refused with the list (a slash text sent as
  a normal prompt would silently do something else). :meth:`run` is the Python twin of Run.
- Messages (a refusal, a failure) go to the owner's ``report`` callback: the panel has one message line.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from silo_nb.model import (
    AgentCommand,
)
from silo_nb.notebook.render import styles
from silo_nb.notebook.widgets._common import close_tree, esc, ipw, log

__all__ = ["CommandPalette"]


class CommandPalette(ipw.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    def __init__(
        self,
        commands: Callable[[], Sequence[AgentCommand]],
        *,
        agent_name: str,
        on_run: Callable[[str], None] | None,
        report: Callable[[str | None], None],
    ) -> None:
        self._commands = commands
        self._agent_name = agent_name
        self._on_run = on_run
        self._report = report
        self.command_box: Any = ipw.Combobox(
            options=(), value="", placeholder="/command", ensure_option=False, layout=ipw.Layout(width="14em")
        )
        self.args_text: Any = ipw.Text(value="", placeholder="arguments", layout=ipw.Layout(flex="1 1 auto"))
        self.run_button: Any = ipw.Button(
            description="Run",
            icon="play",
            tooltip="Send the command as a prompt",
            disabled=on_run is None,
            layout=ipw.Layout(width="auto"),
        )
        self.command_buttons: Any = ipw.VBox(children=[])
        self.commands_html: Any = ipw.HTML(value="")
        super().__init__(
            children=[
                ipw.HBox(children=[self.command_box, self.args_text, self.run_button]),
                self.command_buttons,
                self.commands_html,
            ]
        )
        self.command_box.observe(lambda _change: self._show_hint(), names="value")
        self.run_button.on_click(lambda _button: self.run_clicked())
        # Enter in the arguments field: the browser sends a "submit" event (Text.on_submit is deprecated).
        self.args_text.on_msg(self._args_message)

    def refresh(self) -> None:
        """Repaint from the announced commands."""
        commands = self._commands()
        self.command_box.options = tuple(f"/{c.name}" for c in commands)
        old = list(self.command_buttons.children)
        self.command_buttons.children = tuple(self._command_row(command) for command in commands)
        for row in old:
            close_tree(row)
        empty = f'<div style="{styles.SMALL};{styles.FAINT_TEXT}">No commands advertised.</div>'
        self.commands_html.value = "" if commands else empty
        self._show_hint()

    def pick(self, name: str) -> None:
        """A listed command's button: the field shows it (and its hint goes to the arguments field)."""
        self.command_box.value = f"/{name.strip().lstrip('/')}"
        self._report(None)

    def run(self, name: str, args: str = "") -> str:
        """Run a command as Run would: ``on_run("/name args")``. Returns the text sent.

        A name the agent did not announce raises ``ValueError`` listing the ones it did."""
        command = name.strip().lstrip("/").strip()
        if not command:
            raise ValueError("no command given")
        if self.find(command) is None:
            known = ", ".join(f"/{c.name}" for c in self._commands()) or "none yet"
            raise ValueError(f"/{command} is not a command of {self._agent_name} (commands: {known})")
        extra = args.strip()
        text = f"/{command} {extra}" if extra else f"/{command}"
        if self._on_run is not None:
            self._on_run(text)
        return text

    def find(self, name: str) -> AgentCommand | None:
        wanted = name.strip().lstrip("/")
        return next((c for c in self._commands() if c.name == wanted), None)

    def run_clicked(self) -> None:
        name = str(self.command_box.value or "")
        if not name.strip().lstrip("/"):
            self._report("Pick a command first.")
            return
        try:
            self.run(name, str(self.args_text.value or ""))
        except ValueError as exc:  # not a command of this agent: say which are
            self._report(str(exc))
            return
        except Exception as exc:
            log.exception("running %s failed", name)
            self._report(f"{name} could not be run: {exc}")
            return
        self._report(None)
        self.args_text.value = ""

    def _command_row(self, command: AgentCommand) -> Any:
        button = ipw.Button(
            description=f"/{command.name}",
            tooltip=command.description or f"/{command.name}",
            layout=ipw.Layout(width="auto"),
        )
        button.on_click(lambda _button, name=command.name: self.pick(name))
        text = esc(command.description or "")
        if command.input is not None and command.input.hint:
            text += f' <i style="{styles.FAINT_TEXT}">({esc(command.input.hint)})</i>'
        description = ipw.HTML(value=f'<span style="{styles.SMALL}">{text}</span>')
        return ipw.HBox(children=[button, description], layout=ipw.Layout(align_items="center"))

    def _show_hint(self) -> None:
        command = self.find(str(self.command_box.value or ""))
        hint = command.input.hint if command is not None and command.input is not None else None
        self.args_text.placeholder = hint or "arguments"

    def _args_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict) and content.get("event") == "submit":
            self.run_clicked()
