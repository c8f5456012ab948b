"""Settings that live in the address bar, so that each step of a demo is a bookmark.

Widgets whose value reads well in a URL (numbers, plain words) use Streamlit's own
``bind="query-params"``. Choices shown by a long name but named in the URL by a short id (a
device "NVIDIA Tesla T4 (TU104, Turing)" is ``?explore_device=t4``) go through ``choice``: the
URL is read once per session when the widget first appears, then the widget's state (kept for
the session, across pages) leads and the URL follows it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st

_READ = "_urlstate_read"  # URL parameters already taken into the session


def initial(param: str, options: Sequence[str], default: str) -> str:
    """The value a widget starts from: the URL's ``param`` the first time, if it is an option."""
    read = st.session_state.setdefault(_READ, set())
    wanted = st.query_params.get(param) if param not in read else None
    read.add(param)
    return wanted if wanted in options else default


def choice(
    label: str,
    options: Sequence[str],
    default: str,
    key: str,
    *,
    param: str | None = None,
    format_func: Callable[[str], str] = str,
    help: str | None = None,
) -> str:
    """A selectbox over ids, named in the URL as ``?param=id`` (``param`` defaults to ``key``).

    A ``key`` may be more specific than its ``param`` (the link picker's key names the device),
    so that a value chosen for one device is not carried to another.
    """
    param = param or key
    options = list(options)
    default = default if default in options else options[0]
    if st.session_state.get(key) not in options:
        st.session_state[key] = initial(param, options, default)
    value = st.selectbox(label, options, format_func=format_func, key=key, help=help, persist_state="session")
    if value == default:
        st.query_params.pop(param, None)
    else:
        st.query_params[param] = value
    return value
