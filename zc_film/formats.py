"""The files a film can be written as: container, video codec and its settings, audio codec.

Every piece of a film is encoded with the same settings, so that pieces join by a remux (no
second encode): ``h264-mp4`` therefore encodes without B-frames (each piece's decode order equals
its display order, so their timestamps chain), which costs some size at the same quality (CRF).
ProRes and FFV1 are intra-only; VP9 pieces chain as they are. PyAV (``av``, ComfyUI's own
dependency) does the encoding; which codecs a PyAV build carries varies, so a format is checked
against this build before anything is decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import RenderError


@dataclass(frozen=True)
class Format:
    name: str              # what the node offers
    container: str         # PyAV's format name
    extension: str
    codec: str             # the video encoder
    pix_fmt: str
    audio_codec: str
    lossless: bool
    use: str               # one line for the node's tooltip
    quality_option: str | None = None  # the encoder option the node's quality sets (CRF)
    options: dict = field(default_factory=dict)
    even_size: bool = True  # chroma subsampling: width and height must be even

    def encoder_options(self, quality: int) -> dict[str, str]:
        opts = dict(self.options)
        if self.quality_option:
            opts[self.quality_option] = str(int(quality))
        return opts


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("h264-mp4", "mp4", "mp4", "libx264", "yuv420p", "aac", False,
           "H.264 in MP4: plays everywhere (quality = CRF, lower is better; 17-23 usual)",
           quality_option="crf", options={"preset": "medium", "bf": "0"}),
    Format("prores-mov", "mov", "mov", "prores_ks", "yuv422p10le", "pcm_s16le", False,
           "ProRes 422 HQ in MOV: for editing (large files; quality unused)",
           options={"profile": "3"}),
    Format("ffv1-mkv", "matroska", "mkv", "ffv1", "bgr0", "flac", True,
           "FFV1 in Matroska: lossless, every frame exact (large files; quality unused)",
           options={"level": "3", "g": "1"}, even_size=False),
    Format("vp9-webm", "webm", "webm", "libvpx-vp9", "yuv420p", "libopus", False,
           "VP9 in WebM: for the web (quality = CRF, lower is better; 24-36 usual)",
           quality_option="crf", options={"b": "0", "deadline": "good", "cpu-used": "4", "row-mt": "1"}),
)}
DEFAULT = "h264-mp4"


def _encoders() -> set[str]:
    import av

    return set(av.codecs_available)


def writable() -> list[str]:
    """The formats this PyAV build can write (its video and audio encoders both present)."""
    try:
        have = _encoders()
    except ImportError:
        return []
    return [f.name for f in FORMATS.values() if f.codec in have and f.audio_codec in have]


def resolve(name: str) -> Format:
    """The format called ``name``, when this PyAV can write it; else RenderError listing those it can."""
    try:
        import av  # noqa: F401
    except ImportError:
        raise RenderError("PyAV (the av package, a ComfyUI requirement) is not installed, so no video can be "
                          "written; install ComfyUI's requirements (python -m pip install av) and restart") from None
    fmt = FORMATS.get(name)
    if fmt is None:
        raise RenderError(f"unknown film format {name!r}; this PyAV build writes: {', '.join(writable()) or 'none'}")
    missing = [c for c in (fmt.codec, fmt.audio_codec) if c not in _encoders()]
    if missing:
        raise RenderError(f"format {name!r} needs the encoder(s) {', '.join(missing)}, which this PyAV build lacks; "
                          f"it writes: {', '.join(writable()) or 'none'}")
    return fmt


def check_size(fmt: Format, width: int, height: int) -> None:
    if fmt.even_size and (width % 2 or height % 2):
        raise RenderError(f"format {fmt.name!r} needs an even width and height ({fmt.pix_fmt}); this film's frames "
                          f"are {width}x{height}: use ffv1-mkv, or make the shots at an even size")
