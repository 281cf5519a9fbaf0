"""What a checkpoint saves per parameter: the components and the presets (plain data).

Kept apart from the stall model so that the command line can list and complete the preset names
without importing the model (``cli/tools.py`` is imported by every command).
"""

from __future__ import annotations

# name: (bytes per parameter, description)
COMPONENTS: dict[str, tuple[float, str]] = {
    "weights_bf16": (2, "bf16 model weights"),
    "weights_fp32": (4, "fp32 model weights"),
    "master_fp32": (4, "fp32 master weights"),
    "adam_m_fp32": (4, "Adam momentum (m), fp32"),
    "adam_v_fp32": (4, "Adam variance (v), fp32"),
    "grads_bf16": (2, "bf16 gradients"),
    "grads_fp32": (4, "fp32 gradients"),
}

_ADAMW_MIXED = ("weights_bf16", "master_fp32", "adam_m_fp32", "adam_v_fp32")
PRESET_PARTS: dict[str, tuple[str, ...]] = {
    "bf16-adamw": _ADAMW_MIXED,
    "bf16-adamw-bf16grads": (*_ADAMW_MIXED, "grads_bf16"),
    "bf16-adamw-grads": (*_ADAMW_MIXED, "grads_fp32"),
    "fp32-adamw": ("weights_fp32", "adam_m_fp32", "adam_v_fp32"),
    "fp32-adamw-grads": ("weights_fp32", "grads_fp32", "adam_m_fp32", "adam_v_fp32"),
    "bf16-weights": ("weights_bf16",),
    "fp32-weights": ("weights_fp32",),
}
DEFAULT_PRESET = "bf16-adamw"  # what DeepSpeed/Megatron save by default: no gradients


def preset_names(incomplete: str = "") -> list[str]:
    """The preset names starting with ``incomplete`` (shell completion of ``--preset``)."""
    return [name for name in PRESET_PARTS if name.startswith(incomplete)]
