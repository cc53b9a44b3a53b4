"""geoopt (spheres, the Poincaré ball, Riemannian SGD), imported in one place.

geoopt compiles helpers with ``torch.jit.script`` when it is imported, which recent torch answers
with a FutureWarning per helper; it is geoopt's to fix, so the warning is silenced here, for that
import only, instead of by a filter that would hide it for the whole process.
"""

import warnings

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*deprecated", category=FutureWarning)
    import geoopt
    import geoopt.optim

__all__ = ["geoopt"]
