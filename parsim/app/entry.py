"""Entry of the app: page configuration and navigation between the five pages."""

from __future__ import annotations

import streamlit as st

from parsim.app import PAGES

TITLES = {
    "explore.py": ("Explore", ":material/search:"),
    "compare.py": ("Compare", ":material/compare_arrows:"),
    "scale.py": ("Scale out", ":material/hub:"),
    "measure.py": ("Measure", ":material/speed:"),
    "learn.py": ("Learn", ":material/school:"),
}


def main() -> None:
    st.set_page_config(page_title="parsim", page_icon=":material/memory:", layout="wide")
    pages = [
        st.Page(PAGES / name, title=title, icon=icon, default=name == "explore.py")
        for name, (title, icon) in TITLES.items()
    ]
    st.navigation(pages).run()


if __name__ == "__main__":
    main()
