"""Budget guard: lock a model only if its weights, ComfyUI's inference reserve
and the user's headroom fit on the device together.

A lock that leaves too little room does not save reloads: it turns them into
out-of-memory errors. So a model that does not fit is passed through unlocked,
and the refusal names every figure and the ways out.
"""

from __future__ import annotations

from dataclasses import dataclass

from .units import fmt_bytes


@dataclass(frozen=True)
class BudgetCheck:
    weight_bytes: int  # the model to lock
    reserve_bytes: int  # ComfyUI's minimum inference memory (0.8 GiB + --reserve-vram)
    headroom_bytes: int  # the user's vram_headroom_gb: activations, text encoder, VAE decode
    other_locked_bytes: int  # weights other residency locks keep on the same device
    total_bytes: int  # the device's total memory
    device: str

    @property
    def needed_bytes(self) -> int:
        return self.weight_bytes + self.reserve_bytes + self.headroom_bytes + self.other_locked_bytes

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.total_bytes

    def arithmetic(self) -> str:
        others = f" + {fmt_bytes(self.other_locked_bytes)} other locks" if self.other_locked_bytes else ""
        relation = "<=" if self.fits else ">"
        return (f"{fmt_bytes(self.weight_bytes)} weights + {fmt_bytes(self.reserve_bytes)} inference "
                f"reserve + {fmt_bytes(self.headroom_bytes)} headroom{others} = "
                f"{fmt_bytes(self.needed_bytes)} {relation} {fmt_bytes(self.total_bytes)} total on "
                f"{self.device}")

    def refusal(self) -> str:
        """Why the model is not locked, and what would make it fit."""
        short = self.needed_bytes - self.total_bytes
        fixes = ["lower vram_headroom_gb (now "
                 f"{self.headroom_bytes / (1 << 30):g})" if self.headroom_bytes else None,
                 "release the other locks (enable_pinning off on their nodes)" if self.other_locked_bytes
                 else None,
                 "use a smaller or quantised model",
                 "or leave it unlocked: ComfyUI then offloads part of it when memory runs short"]
        return (f"not locked: {self.arithmetic()} ({fmt_bytes(short)} short). "
                + "; ".join(f for f in fixes if f) + ".")


def check(*, weight_bytes: int, reserve_bytes: int, headroom_bytes: int, other_locked_bytes: int,
          total_bytes: int, device: str) -> BudgetCheck:
    """The budget check for locking weight_bytes on a device of total_bytes."""
    for name, value in (("weight_bytes", weight_bytes), ("reserve_bytes", reserve_bytes),
                        ("headroom_bytes", headroom_bytes), ("other_locked_bytes", other_locked_bytes),
                        ("total_bytes", total_bytes)):
        if value < 0:
            raise ValueError(f"{name} is {value}; expected a byte count >= 0")
    return BudgetCheck(int(weight_bytes), int(reserve_bytes), int(headroom_bytes),
                       int(other_locked_bytes), int(total_bytes), str(device))
