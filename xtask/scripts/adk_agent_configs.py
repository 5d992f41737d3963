"""Exports the fields of google-adk's agent configuration models (the `AgentConfig` family that
`root_agent.yaml` files are read with) as JSON, for `cargo xtask codegen` to generate
sinew-fluent's IR from.

Usage: python adk_agent_configs.py  (prints the snapshot on standard output)

Pydantic cannot write a JSON schema of these models (`generate_content_config` holds an httpx
client type), so each field's annotation is written as a small type tree instead:
  {"kind": "str" | "bool" | "int" | "float" | "any"}
  {"kind": "optional" | "list", "of": TYPE}
  {"kind": "literal", "values": [...]}
  {"kind": "union", "of": [TYPE, ...]}
  {"kind": "named", "name": "CodeConfig"}
"""

import json
import sys
import typing

import google.adk
from google.adk.agents.common_configs import AgentRefConfig, CodeConfig
from google.adk.agents.llm_agent_config import LlmAgentConfig
from google.adk.agents.loop_agent_config import LoopAgentConfig
from google.adk.agents.parallel_agent_config import ParallelAgentConfig
from google.adk.agents.sequential_agent_config import SequentialAgentConfig
from google.adk.tools.tool_configs import ToolConfig

# The agent class each configuration builds, and the configuration model.
CLASSES = {
    "LlmAgent": LlmAgentConfig,
    "SequentialAgent": SequentialAgentConfig,
    "ParallelAgent": ParallelAgentConfig,
    "LoopAgent": LoopAgentConfig,
}

SCALARS = {str: "str", bool: "bool", int: "int", float: "float"}


def type_tree(annotation):
    if annotation in SCALARS:
        return {"kind": SCALARS[annotation]}
    if annotation is typing.Any:
        return {"kind": "any"}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return {"kind": "literal", "values": list(args)}
    if origin is list or origin is typing.List:
        return {"kind": "list", "of": type_tree(args[0])}
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        rest = [a for a in args if a is not type(None)]
        inner = type_tree(rest[0]) if len(rest) == 1 else {"kind": "union", "of": [type_tree(a) for a in rest]}
        return {"kind": "optional", "of": inner} if len(rest) < len(args) else inner
    if isinstance(annotation, type):
        return {"kind": "named", "name": annotation.__name__}
    raise SystemExit(f"unknown annotation: {annotation!r}")


def field(name, info):
    out = {"name": name, "type": type_tree(info.annotation), "required": info.is_required()}
    if info.default_factory is not None:
        # A default made by a function: the type's empty value.
        out["default_factory"] = True
    elif not info.is_required():
        default = info.default
        out["default"] = default if default is None or isinstance(default, (str, bool, int, float)) else repr(default)
    # The first paragraph of the description: what the field is, without its examples.
    description = (info.description or "").strip().split("\n\n")[0]
    out["description"] = " ".join(description.split())
    return out


# The configuration types the agent configurations refer to, which sinew-fluent writes by hand:
# the generator checks that they still have these fields.
TYPES = {"AgentRefConfig": AgentRefConfig, "CodeConfig": CodeConfig, "ToolConfig": ToolConfig}

snapshot = {
    "adk_version": google.adk.__version__,
    "types": [
        {"name": name, "fields": [field(f, info) for f, info in model.model_fields.items()]}
        for name, model in TYPES.items()
    ],
    "classes": [
        {
            "class": agent_class,
            "config": config.__name__,
            "fields": [field(name, info) for name, info in config.model_fields.items()],
        }
        for agent_class, config in CLASSES.items()
    ],
}
json.dump(snapshot, sys.stdout, indent=2, sort_keys=False)
sys.stdout.write("\n")
