"""Real ComfyUI, in-process on the CPU. Runs whenever COMFYUI_PATH points at a
ComfyUI checkout; otherwise every test here is skipped with that reason.

Fixtures (all session-scoped unless noted):
  comfyui          ComfyUI imported in-process (args.cpu), tmp input/output folders;
                   comfyui.run(prompt) validates + executes an API-format prompt.
  zc_test_nodes    the TEST-ONLY fake node pack in tools/standins/zc_test_nodes (ZCTest* nodes), loaded
                   through ComfyUI's own custom-node loader; returns the loaded module.
  captures         (function) zc_test_nodes with its capture store emptied and ComfyUI's
                   output cache reset, so every capture node of the test really runs.
  model_dirs       tmp model folders registered with folder_paths (diffusion_models, vae).
  tiny_wan21_t2v   tiny random Wan 2.1 T2V DiT in model_dirs (UNETLoader name: .name).
  tiny_wan21_i2v   tiny random Wan 2.1 I2V DiT (in_dim 36, img_emb) → WAN21 image_to_video.
  wan21_vae        random Wan 2.1 VAE, real architecture at reduced width (VAELoader name: .name).
  wan21_vae_full   random Wan 2.1 VAE at the released width (dim 96, ~127 M params, bf16 file).

Example (a new test module in this folder):

    from conftest import Graph

    def test_something(comfyui, captures, tiny_wan21_t2v):
        g = Graph()
        model = g.add("UNETLoader", unet_name=tiny_wan21_t2v.name, weight_dtype="default")
        pos = g.add("ZCTestConditioning", seed=1, tokens=8)
        neg = g.add("ZCTestConditioning", seed=2, tokens=8)
        empty = g.add("EmptyHunyuanLatentVideo", width=64, height=64, length=9, batch_size=1)
        sampled = g.add("KSampler", model=g.out(model), seed=7, steps=2, cfg=1.0,
                        sampler_name="euler", scheduler="simple", positive=g.out(pos),
                        negative=g.out(neg), latent_image=g.out(empty), denoise=1.0)
        g.add("ZCTestCaptureLatent", samples=g.out(sampled), label="shot1")
        run = comfyui.run(g.prompt)           # raises ComfyRunError on a failing node
        latent = captures.CAPTURED["shot1"]  # {"samples": [1, 16, 3, 8, 8]}
        assert run.executed and comfyui.output(run, sampled)["samples"].shape == latent["samples"].shape
"""

from __future__ import annotations

import asyncio
import copy
import os
import sys
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
COMFYUI_PATH = os.environ.get("COMFYUI_PATH")
ZC_TEST_NODES_DIR = REPO / "tools" / "standins" / "zc_test_nodes"
TEST_CLIENT_ID = "zc-integration-test"  # with a client id the executor reports per-node events


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


class RunResult(dict):
    """Raw outputs of one queue run by node id (``result[node_id][output_index]``; None
    for nodes with no cached output), plus what the executor reported about the run."""

    def __init__(self, outputs: dict, *, prompt_id: str, events: list, ui: dict):
        super().__init__(outputs)
        self.prompt_id = prompt_id
        self.events = events  # (event, data) sent to the client during this run
        self.ui = ui  # executor.history_result["outputs"]: ui dicts by node id
        # node ids the executor ran (an "executing" event each), in order
        self.executed = [d["node"] for e, d in events if e == "executing" and d.get("node") is not None]
        # node ids whose outputs were already cached when the run started
        self.cached = next((d["nodes"] for e, d in events if e == "execution_cached"), [])


class ComfyRunError(AssertionError):
    """A prompt failed validation or execution; ``.error`` holds ComfyUI's message."""

    def __init__(self, message: str, error: dict):
        super().__init__(message)
        self.error = error


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
        self.nodes, self.execution, self.folder_paths = nodes, execution, folder_paths
        self.input_dir, self.output_dir = input_dir, output_dir
        self._peer_failures: dict[str, str] = {}
        self.server = RecordingServer()
        # ZC_COMFY_CACHE=ram runs the suite under the RAM-pressure cache, ComfyUI's default since
        # v0.33.0 (classic by default: its behaviour is the strictest about re-running nodes)
        cache = {"ram": execution.CacheType.RAM_PRESSURE}.get(os.environ.get("ZC_COMFY_CACHE", ""),
                                                              execution.CacheType.CLASSIC)
        self.executor = execution.PromptExecutor(self.server, cache_type=cache,
                                                 cache_args={"lru": 0, "ram": 0, "ram_inactive": 0})

    def load_custom_node(self, path: Path):
        """Load a custom node package through ComfyUI's own loader; returns its module.

        ComfyUI catches import errors and only logs them, so a False return is turned into a
        failure here. The module is registered in sys.modules under its path (with '.'
        replaced by '_x_'), which is how the test reaches its module-level state."""
        path = str(Path(path).resolve())
        ok = asyncio.run(self.nodes.load_custom_node(path, module_parent="custom_nodes"))
        assert ok, f"ComfyUI could not load custom nodes from {path} (see the log above)"
        return sys.modules[path.replace(".", "_x_")]

    def load_peer_pack(self, path: str, node: str) -> str | None:
        """Load a peer node pack (e.g. KJNodes) that provides ``node``, once; None when ``node`` is
        there after it, else the reason it is not (the pack does not load on this ComfyUI: an
        older ComfyUI lacks what the pack imports). A failed load is not tried again."""
        if node in self.nodes.NODE_CLASS_MAPPINGS:
            return None
        if path in self._peer_failures:
            return self._peer_failures[path]
        try:
            self.load_custom_node(path)
        except AssertionError:
            pass
        if node not in self.nodes.NODE_CLASS_MAPPINGS:
            self._peer_failures[path] = (f"the node pack at {path} does not provide {node} on this ComfyUI "
                                         "(it failed to load or lacks the node; see the log)")
            return self._peer_failures[path]
        return None

    def run(self, prompt: dict, *, targets=None, expect_error: bool = False) -> RunResult:
        """Validate and execute an API-format prompt as one queue item.

        By default the prompt's OUTPUT_NODE nodes are executed (as the server does);
        ``targets`` (node ids, any node) executes just those and their ancestors instead,
        so a graph needs no output node to be read. The prompt is deep-copied first: the
        executor writes each node's fingerprint into the prompt dict it is given
        (execution.py IsChangedCache.get), and a real server parses a fresh dict per queue
        item. With ``expect_error`` a failing run returns its RunResult (the
        "execution_error" event is in .events) instead of raising ComfyRunError."""
        prompt = copy.deepcopy(prompt)
        prompt_id = str(uuid.uuid4())
        if targets is None:
            valid = asyncio.run(self.execution.validate_prompt(prompt_id, prompt, None))
            ok, error, outputs, node_errors = valid[:4]
        else:
            outputs = [str(t) for t in targets]
            ok, error, node_errors = self._validate_targets(prompt_id, prompt, outputs)
        if not ok:
            raise ComfyRunError(f"invalid prompt: {error} {node_errors}", {"error": error,
                                                                        "node_errors": node_errors})
        first_event = len(self.server.events)
        self.executor.execute(prompt, prompt_id, extra_data={"client_id": TEST_CLIENT_ID},
                              execute_outputs=outputs)
        events = self.server.events[first_event:]
        cache = self.executor.caches.outputs
        # v0.33.0: outputs.get() is a coroutine and get_local() the plain lookup; v0.3.75
        # has only the plain get().
        lookup = getattr(cache, "get_local", None) or cache.get
        raw = {}
        for node in prompt:
            entry = lookup(node)
            raw[node] = None if entry is None else entry.outputs
        result = RunResult(raw, prompt_id=prompt_id, events=events,
                           ui=getattr(self.executor, "history_result", {}).get("outputs", {}))
        failure = next((d for e, d in events if e == "execution_error"), None)
        if failure is not None and not expect_error:
            raise ComfyRunError(f"{failure['node_type']} (node {failure['node_id']}) raised "
                                f"{failure['exception_type']}: {failure['exception_message']}", failure)
        assert expect_error or self.executor.success, events[-3:]
        return result

    def reset_cache(self) -> None:
        """Forget every cached node output (a fresh CacheSet), as a restarted server would;
        module state of node packs and models held by ComfyUI's model manager stay."""
        self.executor.reset()

    def _validate_targets(self, prompt_id, prompt, targets):
        async def validate():
            validated, node_errors = {}, {}
            for node in targets:
                assert node in prompt, f"target {node} is not in the prompt"
                valid, reasons, _ = await self.execution.validate_inputs(prompt_id, prompt, node, validated)
                if not valid:
                    node_errors[node] = reasons
            for node, (valid, reasons, _) in validated.items():
                if not valid:
                    node_errors[node] = reasons
            return not node_errors, ("invalid inputs" if node_errors else None), node_errors
        return asyncio.run(validate())

    def output(self, result: RunResult, node: str, index: int = 0):
        """The value of output ``index`` of ``node`` (first batch item of ComfyUI's list)."""
        values = result[node]
        assert values is not None, f"node {node} has no output in this run"
        return values[index][0]


class Graph:
    """Builds an API-format prompt with stable node ids ("1", "2", ...):
    ``ref = g.add("UNETLoader", unet_name=..., weight_dtype="default")`` returns the node id;
    ``g.out(ref, i)`` is the link to its output ``i``; ``g.prompt`` is the dict to run."""

    def __init__(self):
        self.prompt: dict = {}

    def add(self, class_type: str, **inputs) -> str:
        node_id = str(len(self.prompt) + 1)
        self.prompt[node_id] = {"class_type": class_type, "inputs": inputs}
        return node_id

    @staticmethod
    def out(node_id: str, index: int = 0) -> list:
        return [node_id, index]


@pytest.fixture(scope="session")
def comfyui(tmp_path_factory) -> Comfy:
    if not COMFYUI_PATH:
        pytest.skip("skipped: COMFYUI_PATH not set")
    return Comfy(Path(COMFYUI_PATH), tmp_path_factory.mktemp("comfy_input"),
                 tmp_path_factory.mktemp("comfy_output"))


@pytest.fixture(scope="session")
def zc_test_nodes(comfyui):
    """The fake ZCTest* nodes, registered in ComfyUI; the loaded module (CAPTURED, ...)."""
    return comfyui.load_custom_node(ZC_TEST_NODES_DIR)


@pytest.fixture
def captures(comfyui, zc_test_nodes):
    """zc_test_nodes with an empty capture store, and ComfyUI's output cache emptied so
    this test's capture nodes run even if an earlier test queued the same graph."""
    comfyui.reset_cache()
    zc_test_nodes.reset_captures()
    yield zc_test_nodes
    zc_test_nodes.reset_captures()


@pytest.fixture(scope="session")
def model_dirs(comfyui, tmp_path_factory) -> dict[str, Path]:
    import tiny_models

    root = tmp_path_factory.mktemp("zc_models")
    dirs = {kind: root / kind for kind in ("diffusion_models", "vae")}
    for kind, folder in dirs.items():
        tiny_models.register_model_folder(kind, folder)
    return dirs


@pytest.fixture(scope="session")
def tiny_wan21_t2v(model_dirs):
    import tiny_models

    return tiny_models.build_tiny_wan21_dit(model_dirs["diffusion_models"], "t2v", seed=0)


@pytest.fixture(scope="session")
def tiny_wan21_i2v(model_dirs):
    import tiny_models

    return tiny_models.build_tiny_wan21_dit(model_dirs["diffusion_models"], "i2v", seed=1)


@pytest.fixture(scope="session")
def wan21_vae(model_dirs):
    """The Wan 2.1 VAE architecture with random weights: reduced width where ComfyUI reads
    the width from the weights (v0.33.0), full width where it is hard-coded (v0.3.75)."""
    import comfy.sd
    import tiny_models
    from safetensors.torch import load_file

    tiny = tiny_models.build_wan21_vae(model_dirs["vae"], dim=tiny_models.TINY_WAN21_VAE_DIM, seed=2)
    try:
        comfy.sd.VAE(sd=load_file(str(tiny.path)))
        return tiny
    except RuntimeError:  # "size mismatch": this ComfyUI builds the Wan VAE at full width
        tiny.path.unlink()
        return tiny_models.build_wan21_vae(model_dirs["vae"], dim=tiny_models.FULL_WAN21_VAE_DIM,
                                           seed=2)


@pytest.fixture(scope="session")
def wan21_vae_full(model_dirs):
    import tiny_models

    return tiny_models.build_wan21_vae(model_dirs["vae"], dim=tiny_models.FULL_WAN21_VAE_DIM, seed=3)
