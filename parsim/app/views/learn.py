"""The Learn page (a thin script: everything is in parsim.app.learn)."""

from parsim.app import learn

learn.render()
