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
