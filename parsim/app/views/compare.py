"""The Compare page (a thin script: everything is in parsim.app.compare)."""

from parsim.app import compare

compare.render()
