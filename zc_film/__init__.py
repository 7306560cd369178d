"""Finishing a film: the chosen line of a tag rendered into a real video file, one shot at a time.

Memory is bounded by one shot (plus a seam's crossfade overlap): each shot is decoded, trimmed,
encoded into pieces that a bounded on-disk cache keeps, and the film file is then joined from the
pieces without encoding again (a remux). A changed take re-renders its own pieces only; a stopped
render resumes from the pieces already made. Beside the film: per-shot clips and an
OpenTimelineIO timeline for the editor.

Modules, one job each:

- ``plan``: the frame arithmetic of a film (trims, crossfades, where each shot's frames land)
- ``formats``: the containers and codecs a film can be written in, checked against this PyAV
- ``pieces``: encoding frames into a piece file, reading frames back
- ``segment_cache``: the bounded, verified on-disk cache of pieces, keyed by what made them
- ``remux``: joining pieces (and the audio) into one file under its final name, atomically
- ``timeline``: the OpenTimelineIO timeline of the film
- ``render``: the whole render of a line, given a decoder for one shot

No ComfyUI here: the node (``zc_nodes/film_render_node.py``) hands in the shots and the decoder.
"""
