"""UI-format ComfyUI workflows, built and checked against real node schemas.

Three jobs, shared by tools/build_examples.py and the integration tests:

- ``Schemas``: the node definitions of a ComfyUI imported in-process (what the
  server's /object_info reports), read through each node class's own API.
- ``Workflow``: builds the UI (LiteGraph) JSON that ComfyUI's frontend loads and
  saves: every node with its inputs, outputs and ``widgets_values`` in the
  frontend's widget order (inputs in ``input_order``, required then optional; a
  control value after seed-like widgets), and the link table.
- ``validate`` / ``to_api_prompt``: check a UI workflow against the schemas (node
  types, input names and types, widget values, links) and convert it into the
  API prompt the frontend would queue.

Import it only after ComfyUI is on sys.path and its nodes are loaded.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field

# Nodes that exist only in the frontend (never sent to the server).
FRONTEND_ONLY = {"Note", "MarkdownNote", "Reroute", "PrimitiveNode"}
WIDGET_TYPES = {"INT", "FLOAT", "STRING", "BOOLEAN", "COMBO"}
# A combo value that names a file (a model, an input image) depends on the user's folders.
FILE_VALUE = re.compile(r".+\.(safetensors|sft|ckpt|pt|pth|bin|gguf|png|jpe?g|webp|mp3|wav|flac)$", re.IGNORECASE)
MODE_ACTIVE = 0
MODE_MUTED = 2  # LiteGraph "never": the frontend leaves the node out of the queued prompt
# Layout (graph units): the title bar a frontend draws above a node's saved position; the room below
# a node's saved size left free because frontends draw nodes taller than saved (Nodes 2.0 up to 26 px
# taller on frontend 1.58.1, measured by tests/integration/test_browser_ui.py), and the gap after it.
TITLE_HEIGHT = 30
GROWTH_ROOM = 30
GAP = 10


@dataclass
class InputDef:
    name: str
    type: str  # socket type ("COMBO" for option lists)
    options: dict
    required: bool
    combo: list | None = None  # combo options

    @property
    def widget_type(self) -> str | None:
        """The widget the frontend makes for this input, or None for a socket-only input."""
        if self.options.get("forceInput"):
            return None
        if self.combo is not None:
            return "COMBO"
        if self.type in WIDGET_TYPES:
            return self.type
        widget = self.options.get("widgetType")
        return widget if widget in WIDGET_TYPES else None

    @property
    def has_control(self) -> bool:
        """The frontend adds a 'control after generate' value after this widget."""
        flag = self.options.get("control_after_generate")
        if flag is not None:
            return bool(flag)
        return self.widget_type == "INT" and self.name in ("seed", "noise_seed")

    def accepts(self, link_type: str) -> bool:
        mine = set(self.type.split(","))
        theirs = set(str(link_type).split(","))
        return "*" in mine or "*" in theirs or bool(mine & theirs)


@dataclass
class NodeDef:
    name: str
    inputs: list[InputDef]
    outputs: list[tuple[str, str]]  # (type, name)
    description: str = ""
    output_node: bool = False

    def input(self, name: str) -> InputDef:
        for item in self.inputs:
            if item.name == name:
                return item
        raise KeyError(f"{self.name} has no input {name!r}; it has: {', '.join(i.name for i in self.inputs)}")

    @property
    def widgets(self) -> list[InputDef]:
        return [i for i in self.inputs if i.widget_type is not None]

    def widget_value_count(self) -> int:
        return sum(2 if w.has_control else 1 for w in self.widgets)

    def output_index(self, key) -> int:
        if isinstance(key, int):
            return key
        for index, (kind, name) in enumerate(self.outputs):
            if name == key:
                return index
        for index, (kind, name) in enumerate(self.outputs):
            if kind == key:
                return index
        raise KeyError(f"{self.name} has no output {key!r}; it has: {self.outputs}")


class Schemas:
    """Node definitions from the running ComfyUI (``nodes.NODE_CLASS_MAPPINGS``)."""

    def __init__(self):
        import nodes

        self._nodes = nodes
        self._cache: dict[str, NodeDef] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._nodes.NODE_CLASS_MAPPINGS

    def info(self, name: str) -> dict:
        """What /object_info reports for one node class."""
        cls = self._nodes.NODE_CLASS_MAPPINGS[name]
        if hasattr(cls, "GET_NODE_INFO_V1"):
            return cls.GET_NODE_INFO_V1()
        types = cls.INPUT_TYPES()
        return {
            "input": types,
            "input_order": {key: list(value) for key, value in types.items()},
            "output": list(cls.RETURN_TYPES),
            "output_name": list(getattr(cls, "RETURN_NAMES", cls.RETURN_TYPES)),
            "description": getattr(cls, "DESCRIPTION", ""),
            "output_node": bool(getattr(cls, "OUTPUT_NODE", False)),
        }

    def __getitem__(self, name: str) -> NodeDef:
        if name not in self._cache:
            if name not in self:
                raise KeyError(f"ComfyUI has no node type {name!r}")
            info = self.info(name)
            inputs = []
            for section in ("required", "optional"):
                specs = info["input"].get(section, {})
                order = info.get("input_order", {}).get(section, list(specs))
                for input_name in order:
                    spec = specs[input_name]
                    kind, options = spec[0], (spec[1] if len(spec) > 1 and isinstance(spec[1], dict) else {})
                    combo = None
                    if isinstance(kind, (list, tuple)):
                        combo, kind = list(kind), "COMBO"
                    elif kind == "COMBO":
                        combo = list(options.get("options", []))
                    inputs.append(InputDef(input_name, str(kind), options, section == "required", combo))
            outputs = [
                (str(t), str(n)) for t, n in zip(info["output"], info.get("output_name", info["output"]))
            ]
            self._cache[name] = NodeDef(
                name, inputs, outputs, info.get("description", ""), bool(info.get("output_node", False))
            )
        return self._cache[name]


# ---------------------------------------------------------------------------- building


@dataclass
class OutputRef:
    node: UINode
    index: int


@dataclass
class UINode:
    id: int
    definition: NodeDef | None  # None for frontend-only nodes
    type: str
    pos: tuple[float, float]
    size: tuple[float, float]
    values: dict
    title: str | None = None
    links_in: dict = field(default_factory=dict)  # input name -> (link id, OutputRef)
    links_out: dict = field(default_factory=dict)  # output index -> [link ids]
    widgets_values: list | None = None
    color: str | None = None
    mode: int = MODE_ACTIVE

    def out(self, key=0) -> OutputRef:
        return OutputRef(self, self.definition.output_index(key))


class Workflow:
    """A UI-format workflow under construction. ``add`` returns a node; an input value
    that is a node's ``out(...)`` becomes a link, anything else a widget value."""

    def __init__(self, schemas: Schemas, name: str):
        self.schemas = schemas
        self.name = name
        self.nodes: list[UINode] = []
        self.links: list[list] = []
        self.groups: list[tuple[str, list[UINode], str, int]] = []  # title, members, colour, pad

    def add(self, class_type: str, pos, *, size=(320, 130), title=None, color=None, **values) -> UINode:
        definition = self.schemas[class_type]
        node = UINode(
            len(self.nodes) + 1, definition, class_type, tuple(pos), tuple(size), {}, title, color=color
        )
        for name, value in values.items():
            item = definition.input(name)
            if isinstance(value, OutputRef):
                self._link(value, node, item)
            else:
                if item.widget_type is None:
                    raise ValueError(f"{class_type}.{name} is a socket ({item.type}); link an output to it")
                node.values[name] = value
        node.widgets_values = self._widget_values(definition, node.values)
        self.nodes.append(node)
        return node

    def note(self, pos, text: str, *, size=(420, 220), title="Read me") -> UINode:
        node = UINode(len(self.nodes) + 1, None, "MarkdownNote", tuple(pos), tuple(size), {}, title)
        node.widgets_values = [text]
        self.nodes.append(node)
        return node

    def mute(self, nodes: list[UINode]) -> None:
        """Leave these nodes out of the prompt until the user un-mutes them (Ctrl+M)."""
        for node in nodes:
            node.mode = MODE_MUTED

    def group(self, title: str, nodes: list[UINode], color="#3f789e", pad=20):
        """A group around these nodes (its bounds follow them when settle() moves them)."""
        self.groups.append((title, list(nodes), color, pad))

    def settle(self) -> None:
        """Move nodes down, never sideways, until none overlaps another: taken top to bottom, a
        node goes below every node already placed that shares some of its columns, with
        GROWTH_ROOM and GAP below that node's saved size. Nodes side by side stay where they are."""
        placed: list[UINode] = []
        for node in sorted(self.nodes, key=lambda n: (n.pos[1], n.pos[0], n.id)):
            x, y = node.pos
            width = node.size[0]
            floor = max((o.pos[1] + o.size[1] + GROWTH_ROOM + GAP + TITLE_HEIGHT for o in placed
                         if x < o.pos[0] + o.size[0] and o.pos[0] < x + width), default=y)
            node.pos = (x, max(y, floor))
            placed.append(node)

    def _group_json(self, index: int, title: str, nodes: list[UINode], color: str, pad: int) -> dict:
        left = min(n.pos[0] for n in nodes) - pad
        top = min(n.pos[1] for n in nodes) - pad - TITLE_HEIGHT
        right = max(n.pos[0] + n.size[0] for n in nodes) + pad
        bottom = max(n.pos[1] + n.size[1] for n in nodes) + pad
        return {
            "id": index,
            "title": title,
            "bounding": [left, top, right - left, bottom - top],
            "color": color,
            "font_size": 24,
            "flags": {},
        }

    def _link(self, source: OutputRef, target: UINode, item: InputDef):
        kind = source.node.definition.outputs[source.index][0]
        if not item.accepts(kind):
            raise TypeError(
                f"cannot link {source.node.type} output {source.index} ({kind}) to "
                f"{target.type}.{item.name} ({item.type})"
            )
        link_id = len(self.links) + 1
        self.links.append([link_id, source.node.id, source.index, target.id, None, kind])
        target.links_in[item.name] = (link_id, source)
        source.node.links_out.setdefault(source.index, []).append(link_id)

    @staticmethod
    def _widget_values(definition: NodeDef, values: dict) -> list:
        out = []
        for widget in definition.widgets:
            if widget.name in values:
                value = values[widget.name]
            elif "default" in widget.options:
                value = widget.options["default"]
            elif widget.combo:
                value = widget.combo[0]
            else:
                value = {"INT": 0, "FLOAT": 0.0, "STRING": "", "BOOLEAN": False}.get(widget.widget_type, "")
            out.append(value)
            if widget.has_control:
                out.append("fixed")  # examples are reproducible: the seed stays as written
        return out

    def to_json(self) -> dict:
        """The UI-format workflow, its nodes settled first (settle())."""
        self.settle()
        nodes = []
        for node in self.nodes:
            entry = {
                "id": node.id,
                "type": node.type,
                "pos": list(node.pos),
                "size": list(node.size),
                "flags": {},
                "order": node.id - 1,
                "mode": node.mode,
                "inputs": [],
                "outputs": [],
                "properties": {"Node name for S&R": node.type},
                "widgets_values": node.widgets_values,
            }
            if node.title:
                entry["title"] = node.title
            if node.color:
                entry["color"] = node.color
            if node.definition is not None:
                for item in node.definition.inputs:
                    linked = node.links_in.get(item.name)
                    if item.widget_type is not None and linked is None:
                        continue  # an unlinked widget is a widget, not a socket
                    slot = {
                        "name": item.name,
                        "type": item.type if item.combo is None else "COMBO",
                        "link": linked[0] if linked else None,
                    }
                    if item.widget_type is not None:
                        slot["widget"] = {"name": item.name}
                    if linked:
                        self.links[linked[0] - 1][4] = len(entry["inputs"])
                    entry["inputs"].append(slot)
                for index, (kind, name) in enumerate(node.definition.outputs):
                    entry["outputs"].append(
                        {
                            "name": name,
                            "type": kind,
                            "links": node.links_out.get(index, []),
                            "slot_index": index,
                        }
                    )
            nodes.append(entry)
        return {
            "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"zerocopy-continuity/{self.name}")),
            "revision": 0,
            "last_node_id": len(self.nodes),
            "last_link_id": len(self.links),
            "nodes": nodes,
            "links": [list(link) for link in self.links],
            "groups": [self._group_json(i, *g) for i, g in enumerate(self.groups, 1)],
            "config": {},
            "extra": {"ds": {"scale": 0.55, "offset": [40, 60]}},
            "version": 0.4,
        }


# ---------------------------------------------------------------------------- checking


def _widget_problems(where: str, widget: InputDef, value) -> list[str]:
    kind = widget.widget_type
    options = widget.options
    if kind == "INT":
        if not isinstance(value, int) or isinstance(value, bool):
            return [f"{where}: {value!r} is not an INT"]
    elif kind == "FLOAT":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return [f"{where}: {value!r} is not a FLOAT"]
    elif kind == "BOOLEAN":
        if not isinstance(value, bool):
            return [f"{where}: {value!r} is not a BOOLEAN"]
    elif kind == "STRING":
        if not isinstance(value, str):
            return [f"{where}: {value!r} is not a STRING"]
    elif kind == "COMBO":
        if value not in (widget.combo or []) and not (isinstance(value, str) and FILE_VALUE.fullmatch(value)):
            return [f"{where}: {value!r} is not one of {widget.combo}"]
        return []
    if kind in ("INT", "FLOAT"):
        if "min" in options and value < options["min"]:
            return [f"{where}: {value} is below the minimum {options['min']}"]
        if "max" in options and value > options["max"]:
            return [f"{where}: {value} is above the maximum {options['max']}"]
    return []


def validate(workflow: dict, schemas: Schemas) -> list[str]:
    """Every problem of a UI workflow against the node schemas (empty when it is valid)."""
    problems = []
    nodes = {node["id"]: node for node in workflow.get("nodes", [])}
    if len(nodes) != len(workflow.get("nodes", [])):
        problems.append("node ids are not unique")
    links = {}
    for link in workflow.get("links", []):
        if not (isinstance(link, list) and len(link) == 6):
            problems.append(f"link {link!r} is not [id, from, from_slot, to, to_slot, type]")
            continue
        if link[0] in links:
            problems.append(f"link id {link[0]} is used twice")
        links[link[0]] = link
    for node in nodes.values():
        kind = node.get("type")
        where = f"node {node['id']} ({kind})"
        if kind in FRONTEND_ONLY:
            continue
        if kind not in schemas:
            problems.append(f"{where}: unknown node type")
            continue
        definition = schemas[kind]
        names = {item.name for item in definition.inputs}
        linked = set()
        for slot_index, slot in enumerate(node.get("inputs", [])):
            name = slot.get("name")
            if name not in names:
                problems.append(f"{where}: unknown input {name!r}")
                continue
            item = definition.input(name)
            if slot.get("link") is None:
                continue
            link = links.get(slot["link"])
            if link is None:
                problems.append(f"{where}.{name}: link {slot['link']} is not in the link table")
                continue
            linked.add(name)
            if link[3] != node["id"] or link[4] != slot_index:
                problems.append(f"{where}.{name}: link {link[0]} points at node {link[3]} slot {link[4]}")
            source = nodes.get(link[1])
            if source is None:
                problems.append(f"{where}.{name}: link {link[0]} comes from missing node {link[1]}")
                continue
            if source["type"] in FRONTEND_ONLY or source["type"] not in schemas:
                continue
            outputs = schemas[source["type"]].outputs
            if not 0 <= link[2] < len(outputs):
                problems.append(f"{where}.{name}: link {link[0]} uses output {link[2]} of {source['type']}")
                continue
            out_type = outputs[link[2]][0]
            if not item.accepts(out_type) or not item.accepts(link[5]):
                problems.append(f"{where}.{name}: {item.type} input linked to a {out_type} output")
            if link[0] not in (source.get("outputs", [{}] * (link[2] + 1))[link[2]].get("links") or []):
                problems.append(
                    f"{where}.{name}: output {link[2]} of node {link[1]} does not list link {link[0]}"
                )
        for item in definition.inputs:
            if item.required and item.widget_type is None and item.name not in linked:
                problems.append(f"{where}: required input {item.name!r} ({item.type}) is not connected")
        values = node.get("widgets_values", [])
        expected = definition.widget_value_count()
        if not isinstance(values, list) or len(values) != expected:
            problems.append(
                f"{where}: {len(values) if isinstance(values, list) else values!r} widget values, "
                f"the schema has {expected} (regenerate with tools/build_examples.py)"
            )
            continue
        position = 0
        for widget in definition.widgets:
            value = values[position]
            position += 2 if widget.has_control else 1
            if widget.name not in linked:
                problems.extend(_widget_problems(f"{where}.{widget.name}", widget, value))
    return problems


def to_api_prompt(workflow: dict, schemas: Schemas) -> dict:
    """The API prompt the frontend queues for a UI workflow (active nodes only)."""
    nodes = {node["id"]: node for node in workflow["nodes"]}
    links = {link[0]: link for link in workflow["links"]}
    prompt = {}
    for node in workflow["nodes"]:
        if node["type"] in FRONTEND_ONLY or node.get("mode", 0) != MODE_ACTIVE:
            continue
        definition = schemas[node["type"]]
        inputs = {}
        values = list(node.get("widgets_values", []))
        position = 0
        for widget in definition.widgets:
            inputs[widget.name] = values[position]
            position += 2 if widget.has_control else 1
        for slot in node.get("inputs", []):
            if slot.get("link") is None:
                continue
            link = links[slot["link"]]
            if nodes[link[1]].get("mode", 0) != MODE_ACTIVE:
                continue
            inputs[slot["name"]] = [str(link[1]), link[2]]
        prompt[str(node["id"])] = {"class_type": node["type"], "inputs": inputs}
    return prompt
