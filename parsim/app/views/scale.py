"""The Scale page (a thin script: everything is in parsim.app.scale)."""

from parsim.app import scale

scale.render()
