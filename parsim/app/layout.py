"""Where controls go, and the presentation mode a teacher puts on the projector.

Normally each page's controls sit in the sidebar, as in Streamlit's gallery apps, and the figures
fill the page. In presentation mode (a toggle in the sidebar, kept in the URL as
``?present=true``) the sidebar folds away, fonts grow, each figure takes one screen, and the
controls wait in a closed "controls" box at the top of the page.
"""

from __future__ import annotations

import contextlib

import streamlit as st

PRESENT = "present"

# Larger type everywhere, one figure per screen, no sidebar: what a back row can read.
PRESENTATION_CSS = """
<style>
html, body, [data-testid="stAppViewContainer"] { font-size: 24px; }  /* 1.5x the everyday 16 px */
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
[data-testid="stHeader"] { display: none; }
[data-testid="stMainBlockContainer"] { max-width: 100%; padding: 1rem 2rem; }
[data-testid="stImage"] img { max-height: 88vh; width: auto !important; margin: 0 auto; display: block; }
[data-testid="stMetricValue"] { font-size: 3rem; }
h1 { font-size: 2.6rem !important; }
</style>
"""


# On a narrow screen (a phone) a figure keeps a readable width and scrolls sideways instead of
# shrinking its labels below legibility.
BASE_CSS = """
<style>
@media (max-width: 640px) {
  [data-testid="stImage"] { overflow-x: auto; }
  [data-testid="stImage"] img { min-width: 760px; }
}
</style>
"""


def base_style() -> None:
    st.markdown(BASE_CSS, unsafe_allow_html=True)


def presentation_switch() -> bool:
    """The presentation-mode toggle (in the sidebar, or on top of the page while presenting)."""
    presenting = _presenting()
    where = st.container() if presenting else st.sidebar  # the sidebar is hidden while presenting
    presenting = where.toggle(
        "presentation mode",
        key=PRESENT,
        bind="query-params",
        help="large fonts, controls folded away, one figure per screen",
    )
    if presenting:
        st.markdown(PRESENTATION_CSS, unsafe_allow_html=True)
    return presenting


def _presenting() -> bool:
    """The switch's state; before the switch first runs, what the URL says (``?present=true``)."""
    if PRESENT in st.session_state:
        return bool(st.session_state[PRESENT])
    return st.query_params.get(PRESENT, "").lower() == "true"


def presenting() -> bool:
    return bool(st.session_state.get(PRESENT, False))


@contextlib.contextmanager
def controls():
    """The container for a page's controls: the sidebar, or a closed box while presenting."""
    if presenting():
        with st.expander("controls", expanded=False, icon=":material/tune:"):
            yield
    else:
        with st.sidebar:
            yield
