"""Core's native loop nodes (ComfyUI v0.36+, PR #16227) for building the loop example on a ComfyUI
that lacks them: StartLoop and EndLoop as read in ``comfy_extras/nodes_loop.py`` of Comfy-Org/ComfyUI
at commit 023f153c712ce2e1ae4df7981dc00197257a98e4 (read, not copied; no ComfyUI tree here has loops).

Written as /object_info reports a node, with two translations to what the frontend draws, since
the builder knows plain widgets and sockets only:

- StartLoop's ``mode`` is a DynamicCombo (options "simple", "For", "List", each with its own
  inputs). The frontend draws it as a combo and, after it, the widgets of the chosen option; for
  "simple" that is ``num_iterations``, named ``mode.num_iterations`` (the DynamicCombo's prefix).
  Only the "simple" option is described here.
- The MatchType sockets (``initial_iteration_value``, ``list_item``, ``current_iteration_value``,
  ``output_value``, ``next_iteration_value``, ``outputs``) take the type of what is linked; here
  they are ``*``. EndLoop's ``terminations`` (an Autogrow of ``termination*`` sockets) is left out.

``LoopSchemas`` serves these two even where ComfyUI has loops, so the example is the same on every
tree it is built on (and a real DynamicCombo is not a plain widget to the builder).
"""

from __future__ import annotations

from comfy_workflows import Schemas

SOURCE = "comfy_extras/nodes_loop.py @023f153c"

AS_READ = {
    "StartLoop": {
        "input": {
            "required": {
                "mode": [["simple", "For", "List"], {"tooltip": "The loop iteration mode."}],
                "mode.num_iterations": ["INT", {"default": 4, "min": 0,
                                                "tooltip": "Number of times to execute the loop body."}],
                "cache_iterations": ["BOOLEAN", {"default": False, "advanced": True}],
            },
            "optional": {
                "parent_iteration": ["INT", {"forceInput": True}],
                "initial_iteration_value": ["*", {}],
            },
        },
        "output": ["INT", "BOOLEAN", "BOOLEAN", "*", "*"],
        "output_name": ["iteration_index", "is_first", "is_last", "list_item", "current_iteration_value"],
        "description": "",
        "output_node": False,
    },
    "EndLoop": {
        "input": {
            "required": {"accumulate": ["BOOLEAN", {"default": False}]},
            "optional": {"output_value": ["*", {}], "next_iteration_value": ["*", {}]},
        },
        "input_order": {"required": ["accumulate"], "optional": ["output_value", "next_iteration_value"]},
        "output": ["*"],
        "output_name": ["outputs"],
        "description": "",
        "output_node": False,
    },
}


class LoopSchemas(Schemas):
    """The running ComfyUI's node schemas, with StartLoop and EndLoop as read (AS_READ)."""

    def __contains__(self, name: str) -> bool:
        return name in AS_READ or super().__contains__(name)

    def info(self, name: str) -> dict:
        return AS_READ[name] if name in AS_READ else super().info(name)
