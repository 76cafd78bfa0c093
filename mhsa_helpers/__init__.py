"""mhsa_helpers: reference implementation, worked examples and widgets of the course.

``mh.<name>`` is the reference function of each exercise of the registry
(``exercises.toml``): a real attribute of this module, set at import from
:mod:`.reference`, so that it completes in JupyterLab and ``help(mh.softmax)``
shows its contract.
"""

from . import (
    checkout,  # noqa: F401  (first: stops where another checkout's package is imported)
    reference,
)
from .examples import EXAMPLES, Example, get_example
from .exercises import names as _names

globals().update({_name: getattr(reference, _name) for _name in _names()})

__all__ = ["EXAMPLES", "Example", "get_example"]
__all__ += _names()  # the registry's, in course order
