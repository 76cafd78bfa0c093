# The read-only setup cell every notebook starts with (the build puts it there,
# followed by the notebook's own lines). Answer cells get exactly these names
# wherever they run: mhsa_helpers.execution.saved.answer_namespace.

import numpy as np

import mhsa_helpers as mh
from mhsa_helpers import checks

checks.readable_output()
