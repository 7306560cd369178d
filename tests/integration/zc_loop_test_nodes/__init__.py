"""TEST-ONLY stand-ins for the three internal nodes a native loop expands into (ComfyUI v0.36+,
``comfy_extras/nodes_loop.py``: LoopIteration, LoopProgress, LoopResult), for trees without loops.

Written here from the behaviour read in that file (not copied): an iteration node hands its
constants and the carried value to the body copies, and is cached only with ``reuse_cache``; the
progress and result nodes are output nodes that always run. tests/integration/loop_emulation.py
names these in the prompt it expands. The module defines no NODE_CLASS_MAPPINGS (V3 entrypoint).
"""

from __future__ import annotations

import math

from comfy_api.latest import ComfyExtension, io


class ZCTestLoopIteration(io.ComfyNode):
    """One iteration's StartLoop outputs: iteration_index, is_first, is_last, list_item,
    current_iteration_value (the value the previous iteration carried; None on the first).
    ``dependency*`` inputs only order it after the previous iteration."""

    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZCTestLoopIteration",
            inputs=[io.Int.Input("iteration_index"), io.Boolean.Input("is_first"), io.Boolean.Input("is_last"),
                    io.AnyType.Input("list_item", optional=True),
                    io.AnyType.Input("current_iteration_value", optional=True),
                    io.Boolean.Input("reuse_cache"),
                    *[io.AnyType.Input(f"dependency{i}", optional=True) for i in range(8)]],
            outputs=[io.Int.Output(), io.Boolean.Output(), io.Boolean.Output(), io.AnyType.Output(),
                     io.AnyType.Output()],
        )

    @classmethod
    def execute(cls, iteration_index, is_first, is_last, reuse_cache, list_item=None,
                current_iteration_value=None, **dependencies) -> io.NodeOutput:
        return io.NodeOutput(iteration_index, is_first, is_last, list_item, current_iteration_value)

    @classmethod
    def fingerprint_inputs(cls, reuse_cache, **kwargs):
        return None if reuse_cache else math.nan  # cache_iterations off: every iteration re-runs


class ZCTestLoopProgress(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZCTestLoopProgress",
            inputs=[io.String.Input("start_id"), io.Int.Input("position"), io.Int.Input("total"),
                    io.Int.Input("previous_progress", optional=True, force_input=True),
                    *[io.AnyType.Input(f"dependency{i}", optional=True) for i in range(8)]],
            outputs=[io.Int.Output()],
            is_output_node=True,
        )

    @classmethod
    def execute(cls, start_id, position, total, previous_progress=None, **dependencies) -> io.NodeOutput:
        return io.NodeOutput(position)

    @classmethod
    def fingerprint_inputs(cls, **kwargs):
        return math.nan


class ZCTestLoopResult(io.ComfyNode):
    """The loop's end: receives every accumulated output and the last iteration's dependencies."""

    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZCTestLoopResult",
            inputs=[io.String.Input("close_id"), io.Int.Input("progress", optional=True, force_input=True),
                    *[io.AnyType.Input(f"output{i}", optional=True) for i in range(16)],
                    *[io.AnyType.Input(f"dependency{i}", optional=True) for i in range(8)]],
            outputs=[],
            is_output_node=True,
        )

    @classmethod
    def execute(cls, close_id, progress=None, **values) -> io.NodeOutput:
        return io.NodeOutput()

    @classmethod
    def fingerprint_inputs(cls, **kwargs):
        return math.nan


class ZCLoopTestNodesExtension(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return [ZCTestLoopIteration, ZCTestLoopProgress, ZCTestLoopResult]


async def comfy_entrypoint():
    return ZCLoopTestNodesExtension()
