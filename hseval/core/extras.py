"""Optional packages: what a bare ``pip install hseval`` leaves out, and the one-line error that
says which extra brings it back.

A bare install holds the metrics, the heads, training and evaluation with PCA. The extras add
t-SNE and UMAP (``projections``), the Streamlit dashboard (``dashboard``), WordNet trees
(``wordnet``), timm's backbones (``timm``) and Slurm jobs through submitit (``slurm``); ``all``
is every one of them, and ``./install.sh`` installs ``all``.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from hseval.core.errors import ConfigError

__all__ = ["EXTRAS", "installed", "check_installed", "require"]

EXTRAS = {"openTSNE": "projections", "umap": "projections", "streamlit": "dashboard", "nltk": "wordnet",
          "timm": "timm", "submitit": "slurm"}
"""Optional top-level module -> the extra of hseval that installs it."""


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a broken or half-removed installation
        return False


def check_installed(module: str, purpose: str) -> None:
    """A one-line :class:`ConfigError` when ``module`` (one of :data:`EXTRAS`) is not installed,
    saying that ``purpose`` needs it and which extra installs it; nothing is imported."""
    top = module.split(".")[0]
    if not installed(top):
        raise ConfigError(f"{purpose} needs the package {top!r}, which is not installed; install it with: "
                          f"pip install 'hseval[{EXTRAS[top]}]'")


def require(module: str, purpose: str) -> ModuleType:
    """``module`` imported, after :func:`check_installed`."""
    check_installed(module, purpose=purpose)
    return importlib.import_module(module)
