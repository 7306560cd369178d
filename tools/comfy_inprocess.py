"""ComfyUI imported in-process (on the CPU unless told), for the main job's chain demo and the benchmark.

    from tools.comfy_inprocess import ComfyInProcess
    comfy = ComfyInProcess(Path(os.environ["COMFYUI_PATH"]), work_dir)   # starts ComfyUI (args.cpu)
    # cpu=False leaves the device flags the caller set on comfy.cli_args.args (bench/gpu/overhead_gpu.py)
    module = comfy.pack                     # this node pack, as ComfyUI's loader imported it
    fakes = comfy.test_nodes                # the ZCTest* module (FakeUMT5Clip, ...)
    outputs = comfy.run(prompt, targets=["7"])   # {node id: that node's cached outputs}

This pack and the test-only ZCTest* nodes (tools/standins/zc_test_nodes: stand-ins for
the text encoder, conditioning and a VAE that raises if called) are loaded through
ComfyUI's own custom-node loader. The integration tests have their own, richer harness
(tests/integration/conftest.py: events, validation errors).
"""

from __future__ import annotations

import asyncio
import copy
import sys
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STANDINS = REPO / "tools" / "standins"
TEST_NODES = STANDINS / "zc_test_nodes"


class _Server:
    """What PromptExecutor needs of a server: messages go nowhere."""
    client_id = None
    last_node_id = None
    last_prompt_id = None
    sockets_metadata: dict = {}

    def send_sync(self, event, data, sid=None):
        pass

    def queue_updated(self):
        pass


class ComfyInProcess:
    def __init__(self, root: Path, work: Path, *, test_nodes: bool = True, cpu: bool = True):
        root = Path(root)
        if not (root / "comfy").is_dir():
            raise SystemExit(f"{root} is not a ComfyUI checkout (no comfy/ folder); fix COMFYUI_PATH")
        sys.path.insert(0, str(root))
        sys.path.insert(0, str(STANDINS))  # tiny_models
        from comfy.cli_args import args
        if cpu:  # before comfy.model_management is imported; cpu=False: the caller's flags (bench/gpu/)
            args.cpu = True
        import folder_paths
        for sub in ("input", "output"):
            (work / sub).mkdir(parents=True, exist_ok=True)
        folder_paths.set_output_directory(str(work / "output"))
        folder_paths.set_input_directory(str(work / "input"))
        import execution
        import nodes
        asyncio.run(nodes.init_extra_nodes(init_custom_nodes=False, init_api_nodes=False))
        self.root, self.work = root, work
        self.nodes, self.execution, self.folder_paths = nodes, execution, folder_paths
        self.pack = self.load_custom_node(REPO)
        self.test_nodes = self.load_custom_node(TEST_NODES) if test_nodes else None
        self.executor = execution.PromptExecutor(_Server(), cache_type=execution.CacheType.CLASSIC,
                                                 cache_args={"lru": 0, "ram": 0, "ram_inactive": 0})

    def load_custom_node(self, path: Path):
        """Load a node package through ComfyUI's loader; its module (sys.modules key: the path
        with '.' replaced by '_x_')."""
        path = str(Path(path).resolve())
        if not asyncio.run(self.nodes.load_custom_node(path)):
            raise SystemExit(f"ComfyUI could not load {path}; see the log above")
        return sys.modules[path.replace(".", "_x_")]

    def module(self, dotted: str):
        """A submodule of this pack as ComfyUI imported it, e.g. module('zc_nodes.runtime')."""
        return sys.modules[f"{self.pack.__name__}.{dotted}"]

    def version(self) -> str:
        try:
            import comfyui_version
            return comfyui_version.__version__
        except ImportError:
            return "unknown"

    def run(self, prompt: dict, targets: list[str]) -> dict:
        """Execute an API-format prompt as one queue item; {node id: cached outputs or None}."""
        prompt = copy.deepcopy(prompt)  # the executor writes fingerprints into the dict
        self.executor.execute(prompt, str(uuid.uuid4()), extra_data={}, execute_outputs=targets)
        if not self.executor.success:
            raise RuntimeError("ComfyUI: the graph failed; see the log above")
        cache = self.executor.caches.outputs
        lookup = getattr(cache, "get_local", None) or cache.get  # v0.33.0 / v0.3.75
        return {node: lookup(node) for node in prompt}
