"""Entry of the app: page configuration, navigation between the pages, presentation mode.

Every page has its own URL from a cold server (``/explore``, ``/learn`` ...); the home page at
``/`` is the plan of a class with a link to each step. The pages' settings live in the URL
(widgets bound to ``st.query_params``), so a step of a demo is a bookmark.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from parsim.app import VIEWS, layout

# script in views/ -> (title, icon, URL path)
PAGES = {
    "home.py": ("Home", ":material/home:", "home"),
    "explore.py": ("Explore", ":material/search:", "explore"),
    "compare.py": ("Compare", ":material/compare_arrows:", "compare"),
    "scale.py": ("Scale out", ":material/hub:", "scale"),
    "measure.py": ("Measure", ":material/speed:", "measure"),
    "learn.py": ("Learn", ":material/school:", "learn"),
}


ICON = Path(__file__).with_name("icon.png")


def pages() -> dict[str, st.Page]:
    """The app's pages by URL path (the home page is the default, served at ``/``)."""
    return {
        url: st.Page(VIEWS / name, title=title, icon=icon, url_path=url, default=name == "home.py")
        for name, (title, icon, url) in PAGES.items()
    }


def main() -> None:
    # a local image: a ":material/...:" page icon makes the browser fetch it from a font server,
    # and classrooms are often offline (the pages' own icons come from the font Streamlit ships)
    st.set_page_config(page_title="parsim", page_icon=str(ICON), layout="wide")
    page = st.navigation(list(pages().values()))
    layout.base_style()
    layout.presentation_switch()
    page.run()


if __name__ == "__main__":
    main()
