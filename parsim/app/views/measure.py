"""The Measure page (a thin script: everything is in parsim.app.measure_page)."""

from parsim.app import measure_page

measure_page.render()
