"""Hooks as configuration: command, prompt and referenced Python hooks from files.

``load(path)`` turns ``hookscope.toml``, ``[tool.hookscope]`` in ``pyproject.toml`` or a Claude
Code settings file into a :class:`HookTable` a :class:`~hookscope.runner.HookRunner` registers;
``watch(runner, path)`` keeps it in step with the file. See DESIGN §7.
"""

from hookscope.engine.claude import ToolAlias
from hookscope.engine.command import CommandHook
from hookscope.engine.config import ConfigError, HookEntry, HookTable, Idle, load
from hookscope.engine.http import HttpHook
from hookscope.engine.policy_config import load_policy
from hookscope.engine.prompt import PromptHook
from hookscope.engine.watch import Watch, watch
from hookscope.matching import HookMatcher

__all__ = [
    "CommandHook",
    "ConfigError",
    "HookEntry",
    "HookMatcher",
    "HookTable",
    "HttpHook",
    "Idle",
    "PromptHook",
    "ToolAlias",
    "Watch",
    "load",
    "load_policy",
    "watch",
]
