"""The Explore page (a thin script: everything is in parsim.app.explore)."""

from parsim.app import explore

explore.render()
