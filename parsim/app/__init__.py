"""The Streamlit app: home, explore, compare, scale out, measure and learn.

``app.py`` at the top of the repository and ``parsim app`` both start ``entry.py``; each page
is a small script in ``views/`` that calls one ``render`` function of this package, and every
computation goes through cached pure functions in ``parsim`` (see ``cache``). The folder is not
called ``pages/``: Streamlit would discover such a folder by itself and serve its scripts as
pages of their own, without the entry script, when someone opens one by its URL first.
"""

from pathlib import Path

ENTRY = Path(__file__).with_name("entry.py")
VIEWS = Path(__file__).with_name("views")


def preload() -> None:
    """Import what every page draws with (pandas, matplotlib, parsim's model and figures).

    ``parsim app`` calls this in a background thread as the server starts, so the first page
    someone opens does not pay half a second of imports; Streamlit runs every page in the same
    process, so the modules are there when it does.
    """
    import matplotlib.figure  # noqa: F401
    import pandas  # noqa: F401

    import parsim.methods.predict  # noqa: F401
    import parsim.plots  # noqa: F401
    import parsim.studies.scenarios  # noqa: F401
