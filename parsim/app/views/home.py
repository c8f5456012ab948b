"""The Home page (a thin script: everything is in parsim.app.home)."""

from parsim.app import home

home.render()
