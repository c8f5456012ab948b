"""The Streamlit app: explore, compare, scale out, measure and learn.

``app.py`` at the top of the repository and ``parsim app`` both start ``entry.py``; each page
is a small script in ``pages/`` that calls one ``render`` function of this package, and every
computation goes through cached pure functions in ``parsim`` (see ``cache``).
"""

from pathlib import Path

ENTRY = Path(__file__).with_name("entry.py")
PAGES = Path(__file__).with_name("pages")
