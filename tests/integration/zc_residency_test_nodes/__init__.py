"""TEST-ONLY nodes for the residency-lock tests (nothing here ships with the pack).

ZCResidencyTestRaiseOOM raises torch.cuda.OutOfMemoryError when it runs, so a
graph can drive ComfyUI's real out-of-memory recovery (execution.py: is_oom ->
unload_all_models) on a CPU-only machine. V3 nodes, loaded with
``nodes.load_custom_node(<this dir>)``; no NODE_CLASS_MAPPINGS (see zc_test_nodes).
"""

from __future__ import annotations

import torch
from comfy_api.latest import ComfyExtension, io

CATEGORY = "_for_testing/zerocopy (fakes)"
FAKE_OOM_MESSAGE = "ZCResidencyTestRaiseOOM: simulated CUDA out of memory (test-only node)"


class ZCResidencyTestRaiseOOM(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="ZCResidencyTestRaiseOOM",
            display_name="ZC TEST raise CUDA OOM",
            category=CATEGORY,
            description="TEST ONLY. Raises torch.cuda.OutOfMemoryError after its input is ready.",
            inputs=[io.Latent.Input("samples", tooltip="anything to order it after the sampler"),
                    io.Int.Input("attempt", default=0, min=0, max=1 << 30,
                                 tooltip="change it to make the node run again")],
            outputs=[],
            is_output_node=True,
        )

    @classmethod
    def execute(cls, samples, attempt=0) -> io.NodeOutput:
        raise torch.cuda.OutOfMemoryError(FAKE_OOM_MESSAGE)


class ZCResidencyTestNodes(ComfyExtension):
    async def get_node_list(self) -> list[type[io.ComfyNode]]:
        return [ZCResidencyTestRaiseOOM]


async def comfy_entrypoint() -> ZCResidencyTestNodes:
    return ZCResidencyTestNodes()
