"""Reading the queued prompt (ComfyUI's API format: node id -> {class_type, inputs}) around a node.

The Store records the seed of the sampler that made its shot, for the film's lineage. ComfyUI
gives a node the whole prompt as a hidden input; the sampler is the node feeding the Store's
``samples`` (a KSampler's ``seed``, a KSamplerAdvanced's ``noise_seed``, or the RandomNoise node
behind a SamplerCustomAdvanced's ``noise``). A seed that is itself linked is followed to the
constant of a primitive node. Anything else: None (nothing is guessed).
"""

from __future__ import annotations

SEED_INPUTS = ("seed", "noise_seed")
MAX_HOPS = 8


def _link(value):
    """(node id, output index) when an input value is a link, else None."""
    if isinstance(value, (list, tuple)) and len(value) == 2 and isinstance(value[1], int):
        return str(value[0]), value[1]
    return None


def _constant(prompt: dict, value, hops: int):
    """A seed value: an int, or the int a chain of links ends in (a primitive's ``value``)."""
    while hops > 0:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        link = _link(value)
        if link is None or link[0] not in prompt:
            return None
        inputs = prompt[link[0]].get("inputs", {})
        value = next((inputs[k] for k in ("value", "seed", "noise_seed") if k in inputs), None)
        hops -= 1
    return None


def sampler_seed(prompt: dict | None, node_id, input_name: str = "samples"):
    """The seed of the sampler whose output reaches ``node_id``'s ``input_name``, or None."""
    if not prompt or node_id is None or str(node_id) not in prompt:
        return None
    link = _link(prompt[str(node_id)].get("inputs", {}).get(input_name))
    for _ in range(MAX_HOPS):
        if link is None or link[0] not in prompt:
            return None
        inputs = prompt[link[0]].get("inputs", {})
        for name in SEED_INPUTS:
            if name in inputs:
                return _constant(prompt, inputs[name], MAX_HOPS)
        noise = _link(inputs.get("noise"))  # SamplerCustomAdvanced -> RandomNoise
        if noise is not None and noise[0] in prompt:
            noise_inputs = prompt[noise[0]].get("inputs", {})
            if "noise_seed" in noise_inputs:
                return _constant(prompt, noise_inputs["noise_seed"], MAX_HOPS)
        # a pass-through in between (e.g. a latent node): follow its latent input
        link = next((_link(inputs[k]) for k in ("samples", "latent", "latent_image") if _link(inputs.get(k))),
                    None)
    return None


MAX_NODES = 4096


def ancestors(prompt: dict | None, node_id, input_name: str = "samples") -> set[str]:
    """Every node whose output reaches ``node_id``'s ``input_name``, through any inputs."""
    if not prompt or node_id is None or str(node_id) not in prompt:
        return set()
    first = _link(prompt[str(node_id)].get("inputs", {}).get(input_name))
    todo = [first[0]] if first else []
    seen: set[str] = set()
    while todo and len(seen) < MAX_NODES:
        current = todo.pop()
        if current in seen or current not in prompt:
            continue
        seen.add(current)
        for value in prompt[current].get("inputs", {}).values():
            link = _link(value)
            if link is not None:
                todo.append(link[0])
    return seen


def class_of(prompt: dict | None, node_id) -> str | None:
    node = (prompt or {}).get(str(node_id))
    return node.get("class_type") if isinstance(node, dict) else None


def consumers(prompt: dict | None, source_id, among: set[str]) -> list[str]:
    """The nodes of ``among`` that take an output of ``source_id`` as an input, by id."""
    found = []
    for candidate in sorted(among):
        inputs = prompt[candidate].get("inputs", {})
        if any((_link(v) or (None,))[0] == str(source_id) for v in inputs.values()):
            found.append(candidate)
    return found
