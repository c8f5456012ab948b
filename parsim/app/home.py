"""Home: what parsim is, and a 45-minute class as a list of links, one per step.

Each link opens a page with its settings in the URL (``st.query_params``), so the same steps
work as bookmarks on a teacher's slides. The steps are data (``links.class_steps``): the tests
open every one of them in a real browser.
"""

from __future__ import annotations

import streamlit as st

from parsim.app import links


def render() -> None:
    from parsim.app import VIEWS
    from parsim.app.entry import PAGES

    scripts = {url: (script, title, icon) for script, (title, icon, url) in PAGES.items()}
    st.title("parsim")
    st.markdown(
        "A simulator of parallel hardware — SISD, SIMD, MIMD and SIMT cores, memory bandwidth, "
        "PCIe copies, several GPUs — that predicts how long a computation takes, shows **why**, "
        "and measures the same computation on this machine to check itself."
    )
    st.subheader("A class in five steps")
    for index, step in enumerate(links.class_steps(), start=1):
        script, title, icon = scripts[step.link.page]
        st.page_link(
            VIEWS / script,
            label=f"{index}. {step.topic} — {title}",
            query_params=step.link.params,
            icon=icon,
        )
        st.caption(step.what)
    st.caption(
        "Every page keeps its settings in the address bar: bookmark a step to put it on a slide. "
        "The presentation-mode switch in the sidebar makes fonts large and folds the controls away."
    )
