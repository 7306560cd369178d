"""Real ComfyUI, in-process on the CPU. Runs whenever COMFYUI_PATH points at a
ComfyUI checkout; otherwise every test here is skipped with that reason."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMFYUI_PATH = os.environ.get("COMFYUI_PATH")


def pytest_collection_modifyitems(config, items):
    if COMFYUI_PATH:
        return
    skip = pytest.mark.skip(reason="skipped: COMFYUI_PATH not set")
    for item in items:
        item.add_marker(skip)


class RecordingServer:
    """The few attributes ComfyUI's executor touches on its server."""

    client_id = None
    last_node_id = None
    last_prompt_id = None
    sockets_metadata: dict = {}

    def __init__(self):
        self.events = []

    def send_sync(self, event, data, sid=None):
        self.events.append((event, data))

    def queue_updated(self):
        pass


class Comfy:
    """A ComfyUI imported in-process with its input/output folders in tmp."""

    def __init__(self, root: Path, input_dir: Path, output_dir: Path):
        sys.path.insert(0, str(root))
        from comfy.cli_args import args
        args.cpu = True  # before comfy.model_management is imported
        import folder_paths
        folder_paths.set_input_directory(str(input_dir))
        folder_paths.set_output_directory(str(output_dir))
        import execution
        import nodes
        asyncio.run(nodes.init_extra_nodes(init_custom_nodes=False, init_api_nodes=False))
        self.nodes, self.execution = nodes, execution
        self.input_dir, self.output_dir = input_dir, output_dir
        self.server = RecordingServer()
        self.executor = execution.PromptExecutor(self.server, cache_type=execution.CacheType.CLASSIC,
                                                 cache_args={"lru": 0, "ram": 0, "ram_inactive": 0})

    def run(self, prompt: dict) -> dict:
        """Validate and execute an API-format prompt; returns the raw outputs by node id."""
        prompt_id = str(uuid.uuid4())
        valid = asyncio.run(self.execution.validate_prompt(prompt_id, prompt, None))
        ok, error, outputs, node_errors = valid[:4]
        assert ok, f"invalid prompt: {error} {node_errors}"
        self.executor.execute(prompt, prompt_id, extra_data={}, execute_outputs=outputs)
        assert self.executor.success, self.server.events[-3:]
        return {node: self.executor.caches.outputs.get(node) for node in prompt}


@pytest.fixture(scope="session")
def comfy(tmp_path_factory) -> Comfy:
    if not COMFYUI_PATH:
        pytest.skip("skipped: COMFYUI_PATH not set")
    return Comfy(Path(COMFYUI_PATH), tmp_path_factory.mktemp("comfy_input"),
                 tmp_path_factory.mktemp("comfy_output"))
