"""adk-python reads sinew-fluent's AgentConfig YAML.

Usage: python adk_load_yaml.py DIR [--build]

Every `*.yaml` file of DIR is validated with adk-python's own `AgentConfig` model; with
`--build`, `DIR/root_agent.yaml` is also turned into real ADK agents by
`config_agent_utils.from_config`, and the tree is printed as JSON (name, class, sub-agents).
"""

import json
import pathlib
import sys

import yaml
from google.adk.agents import config_agent_utils
from google.adk.agents.agent_config import AgentConfig


def tree(agent):
    return {
        "name": agent.name,
        "class": type(agent).__name__,
        "sub_agents": [tree(a) for a in agent.sub_agents],
    }


directory = pathlib.Path(sys.argv[1])
for path in sorted(directory.glob("*.yaml")):
    AgentConfig.model_validate(yaml.safe_load(path.read_text()))
if "--build" in sys.argv:
    root = config_agent_utils.from_config(str(directory / "root_agent.yaml"))
    print(json.dumps(tree(root)))
else:
    print(json.dumps({"validated": len(list(directory.glob("*.yaml")))}))
