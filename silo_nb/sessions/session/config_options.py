"""Config options of one session: the live snapshot, how agents change it, and how the user sets one.

- The snapshot is a tuple, replaced (never mutated); ``on_config_options_changed`` listeners fire on
  every real change, before :meth:`ConfigOptions.set` returns.
- One rule for every session result (new, resume, load, an in-place resume): the agent's
  ``configOptions``, else options synthesized from legacy ``modes``/``models`` (set through
  ``session/set_mode``/``session/set_model``).
- Improvement over Silo (which ignores it): ``config_option_update`` replaces the list;
  ``current_mode_update`` moves the mode option's value.
- ``set`` validates, sends ``session/set_config_option`` and falls back to the legacy setters on -32601.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from silo_nb.acp import METHOD_NOT_FOUND, AcpRpcError
from silo_nb.model import (
    AgentSessionConfigOption,
    AgentSessionError,
    AgentSessionInputError,
    AgentSessionUpdate,
)
from silo_nb.updates import (
    parse_config_options,
    synthesize_legacy_options,
)
from silo_nb.util import ListenerSet

__all__ = ["ConfigOptions", "Requester"]

# ``(method, params) -> result``; raises AgentSessionError when the session is not live.
Requester = Callable[[str, dict[str, Any]], Awaitable[Any]]


class ConfigOptions:
    def __init__(self, label: Callable[[], str]) -> None:
        self._label = label
        self.options: tuple[AgentSessionConfigOption, ...] = ()
        self._synthesized: set[str] = set()
        self.listeners: ListenerSet[[]] = ListenerSet("on_config_options_changed")

    def _replace(self, options: tuple[AgentSessionConfigOption, ...]) -> None:
        if options != self.options:
            self.options = options
            self.listeners.emit()

    def adopt_result(self, result: Mapping[str, Any], *, notify: bool = True) -> None:
        """Options from a ``session/new|load|resume`` result (legacy modes/models synthesized)."""
        options = parse_config_options(result.get("configOptions"))
        synthesized = () if options else synthesize_legacy_options(result)
        self._synthesized = {o.id for o in synthesized}
        if notify:
            self._replace(options or synthesized)
        else:
            self.options = options or synthesized

    def apply_update(self, update: AgentSessionUpdate) -> None:
        raw = update.raw
        if update.kind == "current_mode_update":
            mode = next(
                (
                    v
                    for key in ("currentModeId", "currentValue", "modeId")
                    if isinstance(v := raw.get(key), str) and v
                ),
                None,
            )
            option = next((o for o in self.options if o.category == "mode"), None)
            if mode is not None and option is not None and option.current_value != mode:
                self._replace(self._with_value(option, mode))
        elif update.kind == "config_option_update":
            fresh = parse_config_options(raw.get("configOptions"))
            if fresh or isinstance(raw.get("configOptions"), list):
                self._synthesized.clear()
                self.options = fresh
                self.listeners.emit()

    def _with_value(
        self, option: AgentSessionConfigOption, value: Any
    ) -> tuple[AgentSessionConfigOption, ...]:
        return tuple(
            o.model_copy(update={"current_value": value}) if o.id == option.id else o for o in self.options
        )

    def validate(self, option_id: str, value: Any) -> AgentSessionConfigOption:
        option = next((o for o in self.options if o.id == option_id), None)
        if option is None:
            raise AgentSessionInputError(f'No session config option "{option_id}".')
        if option.type == "boolean" and not isinstance(value, bool):
            raise AgentSessionInputError(f'"{value}" is not a choice for "{option.name}" (true or false).')
        if option.type == "select" and (
            not isinstance(value, str) or all(choice.value != value for choice in option.options)
        ):
            raise AgentSessionInputError(f'"{value}" is not a choice for "{option.name}".')
        return option

    async def set(self, option_id: str, value: Any, request: Requester, session_id: str) -> None:
        option = self.validate(option_id, value)
        if value == option.current_value:
            return
        returned: Any = None
        if option.id in self._synthesized:
            await self._set_legacy(option, value, request, session_id)
        else:
            params: dict[str, Any] = {"sessionId": session_id, "configId": option.id, "value": value}
            if option.type == "boolean":
                params["type"] = "boolean"
            try:
                returned = await request("session/set_config_option", params)
            except AcpRpcError as exc:
                if exc.code != METHOD_NOT_FOUND:
                    raise self._rejected(option, value, exc) from exc
                await self._set_legacy(option, value, request, session_id)
        fresh = parse_config_options(returned.get("configOptions")) if isinstance(returned, Mapping) else ()
        # The agent may already have confirmed the change (current_mode_update) while we awaited its
        # answer; then listeners have heard of it and the list is not replaced a second time.
        self._replace(fresh or self._with_value(option, value))

    async def _set_legacy(
        self, option: AgentSessionConfigOption, value: Any, request: Requester, session_id: str
    ) -> None:
        if option.category == "mode":
            method, params = "session/set_mode", {"sessionId": session_id, "modeId": value}
        elif option.category == "model":
            method, params = "session/set_model", {"sessionId": session_id, "modelId": value}
        else:
            raise AgentSessionError(
                f'{self._label()} has no way to set "{option.name}" '
                f'(category "{option.category or "(none)"}").'
            )
        try:
            await request(method, params)
        except AcpRpcError as exc:
            raise self._rejected(option, value, exc) from exc

    def _rejected(self, option: AgentSessionConfigOption, value: Any, exc: AcpRpcError) -> AgentSessionError:
        return AgentSessionError(
            f'{self._label()} rejected "{option.name}" = "{value}": {exc.agent_message()}'
        )
