"""parsim's Streamlit app: ``streamlit run app.py`` (or ``parsim app``). All of it lives in ``parsim.app``."""

from parsim.app.entry import main

main()
